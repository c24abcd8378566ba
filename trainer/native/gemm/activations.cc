// See activations.h. σ(x) = 1 / (1 + e^−x) with e^x as Cephes' expf computes it (x = n·ln 2 + r,
// a degree-6 polynomial in r, 2^n set in the exponent bits): within 2 ulp of expf over the
// clamped range, and a vector of 8 at a time.
#include <cstdint>
#include <cstring>

#include "activations.h"
#include "simd.h"

namespace clawrl_act {
namespace KERNEL_NS {
namespace {

using clawrl_simd::KERNEL_NS::load;
using clawrl_simd::KERNEL_NS::splat;
using clawrl_simd::KERNEL_NS::store;
using clawrl_simd::KERNEL_NS::v8;
using clawrl_simd::KERNEL_NS::W;
typedef int32_t i8 __attribute__((vector_size(32)));

inline v8 select(i8 mask, v8 a, v8 b) {
  i8 ai, bi;
  std::memcpy(&ai, &a, sizeof a);
  std::memcpy(&bi, &b, sizeof b);
  const i8 r = (ai & mask) | (bi & ~mask);
  v8 out;
  std::memcpy(&out, &r, sizeof out);
  return out;
}

inline v8 expv(v8 x) {
  // Clamped so that 2^n stays a normal float: e^−87.3 ≈ 1.2e−38, e^88.3 ≈ 2.2e38.
  x = select(x < splat(-87.3f), splat(-87.3f), x);
  x = select(x > splat(88.3f), splat(88.3f), x);
  const v8 fx = x * 1.44269504088896341f + 0.5f;
  i8 n = __builtin_convertvector(fx, i8);  // toward zero; then down to the floor
  n += __builtin_convertvector(n, v8) > fx;  // a true comparison is −1
  const v8 nf = __builtin_convertvector(n, v8);
  const v8 r = x - nf * 0.693359375f - nf * -2.12194440e-4f;
  v8 p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.f;
  const i8 bits = (n + 127) << 23;
  v8 scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline v8 sigmoid(v8 x) { return 1.f / (1.f + expv(-x)); }

// Runs `body(offset, g, u, ...)` on full vectors, then once on the tail copied into zero-padded
// vectors: every element goes through the same arithmetic.
template <size_t In, size_t Out, class Body>
inline void vectors(const float* const (&in)[In], float* const (&out)[Out], size_t i0, size_t i1, Body&& body) {
  size_t i = i0;
  for (; i + W <= i1; i += W) {
    v8 x[In], y[Out];
    for (size_t a = 0; a < In; a++) x[a] = load(in[a] + i);
    body(x, y);
    for (size_t b = 0; b < Out; b++) store(out[b] + i, y[b]);
  }
  if (i == i1) return;
  const size_t rest = i1 - i;
  float pad[In][W] = {}, res[Out][W];
  v8 x[In], y[Out];
  for (size_t a = 0; a < In; a++) {
    std::memcpy(pad[a], in[a] + i, rest * sizeof(float));
    x[a] = load(pad[a]);
  }
  body(x, y);
  for (size_t b = 0; b < Out; b++) {
    store(res[b], y[b]);
    std::memcpy(out[b] + i, res[b], rest * sizeof(float));
  }
}

}  // namespace

void swiglu(const float* g, const float* u, float* out, size_t i0, size_t i1) {
  vectors<2, 1>({g, u}, {out}, i0, i1, [](const v8* x, v8* y) { y[0] = x[0] * sigmoid(x[0]) * x[1]; });
}

void swigluBackward(const float* g, const float* u, const float* dy, float* dg, float* du, size_t i0, size_t i1) {
  vectors<3, 2>({g, u, dy}, {dg, du}, i0, i1, [](const v8* x, v8* y) {
    const v8 s = sigmoid(x[0]);
    y[0] = x[2] * x[1] * s * (1.f + x[0] * (1.f - s));
    y[1] = x[2] * (x[0] * s);
  });
}

}  // namespace KERNEL_NS
}  // namespace clawrl_act
