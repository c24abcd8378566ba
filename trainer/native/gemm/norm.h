// RMSNorm on the host (see ../../model/norm.ts): y = x·r·w per row, r = 1/sqrt(mean(x²) + eps),
// one pass where tfjs runs six kernels forward (square, mean, add, rsqrt, two multiplies) and
// about twice as many backward, for two norms a block (four with Qwen3's query and key norms).
// Compiled once per instruction set as kernels.cc is. Each row's sums run in one fixed order
// (8 lanes, then the lanes added pairwise, then the tail), whichever thread takes the row.
#pragma once
#include <cstddef>

namespace clawrl_norm {

// y[r] = x[r]·rinv(x[r])·w for rows [r0, r1) of `cols` floats.
using RmsNormFn = void (*)(const float* x, const float* w, float* y, size_t cols, float eps, size_t r0, size_t r1);
// The gradient for x (w is frozen): dx = r·(w·dy) − x·r³·Σ(w·dy·x)/cols, rows [r0, r1).
using RmsNormBackwardFn = void (*)(const float* x, const float* w, const float* dy, float* dx, size_t cols, float eps, size_t r0, size_t r1);

namespace generic {
void rmsNorm(const float* x, const float* w, float* y, size_t cols, float eps, size_t r0, size_t r1);
void rmsNormBackward(const float* x, const float* w, const float* dy, float* dx, size_t cols, float eps, size_t r0, size_t r1);
}  // namespace generic

#if defined(__x86_64__) || defined(_M_X64)
namespace avx2 {
void rmsNorm(const float* x, const float* w, float* y, size_t cols, float eps, size_t r0, size_t r1);
void rmsNormBackward(const float* x, const float* w, const float* dy, float* dx, size_t cols, float eps, size_t r0, size_t r1);
}  // namespace avx2
#endif

}  // namespace clawrl_norm
