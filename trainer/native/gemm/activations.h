// SwiGLU's forward and backward on the host (see ../../model/swiglu.ts): one pass over the
// gate and up projections where tfjs runs five kernels forward and eight backward. And
// attention's causal softmax (../../model/attention-softmax.ts), which shares its vector exp. Compiled once
// per instruction set as kernels.cc is. Each element is computed by the same vector code wherever
// it falls (a range's tail is padded to a full vector), so the bits never depend on how the work
// is split across threads.
#pragma once
#include <cstddef>

namespace clawrl_act {

// out[i] = silu(g[i])·u[i] = (g·σ(g))·u for i in [i0, i1).
using SwigluFn = void (*)(const float* g, const float* u, float* out, size_t i0, size_t i1);
// With s = σ(g): du = dy·(g·s), dg = dy·u·s·(1 + g·(1 − s)), for i in [i0, i1).
using SwigluBackwardFn = void (*)(const float* g, const float* u, const float* dy, float* dg, float* du, size_t i0, size_t i1);

// Attention's causal softmax over rows of T scores: row r is query position r mod T (rows of g
// heads' [T, T] blocks one after another), p[j] = softmax_j(scale·s[j]) over j ≤ r mod T and 0
// past it, for rows [r0, r1). Its gradient: ds[j] = scale·p[j]·(dp[j] − Σ dp·p), 0 past it.
using CausalSoftmaxFn = void (*)(const float* s, float* p, size_t T, float scale, size_t r0, size_t r1);
using CausalSoftmaxBackwardFn = void (*)(const float* p, const float* dp, float* ds, size_t T, float scale, size_t r0, size_t r1);
// The output head's softmax over a vocabulary slice: for rows [r0, r1) of `cols` logits z,
// p = softmax(z) and lse[r] = log Σ exp(z) (one pass where tfjs runs a softmax, two max
// reductions, a log and a subtraction: ../../model/head.ts).
using SoftmaxRowsFn = void (*)(const float* z, float* p, float* lse, size_t cols, size_t r0, size_t r1);

namespace generic {
void softmaxRows(const float* z, float* p, float* lse, size_t cols, size_t r0, size_t r1);
void causalSoftmax(const float* s, float* p, size_t T, float scale, size_t r0, size_t r1);
void causalSoftmaxBackward(const float* p, const float* dp, float* ds, size_t T, float scale, size_t r0, size_t r1);
void swiglu(const float* g, const float* u, float* out, size_t i0, size_t i1);
void swigluBackward(const float* g, const float* u, const float* dy, float* dg, float* du, size_t i0, size_t i1);
}  // namespace generic

#if defined(__x86_64__) || defined(_M_X64)
namespace avx2 {
void softmaxRows(const float* z, float* p, float* lse, size_t cols, size_t r0, size_t r1);
void causalSoftmax(const float* s, float* p, size_t T, float scale, size_t r0, size_t r1);
void causalSoftmaxBackward(const float* p, const float* dp, float* ds, size_t T, float scale, size_t r0, size_t r1);
void swiglu(const float* g, const float* u, float* out, size_t i0, size_t i1);
void swigluBackward(const float* g, const float* u, const float* dy, float* dg, float* du, size_t i0, size_t i1);
}  // namespace avx2
#endif

}  // namespace clawrl_act
