// See activations.h. σ(x) = 1 / (1 + e^−x) with e^x as Cephes' expf computes it (x = n·ln 2 + r,
// a degree-6 polynomial in r, 2^n set in the exponent bits): within 2 ulp of expf over the
// clamped range, and a vector of 8 at a time.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "activations.h"
#include "simd.h"

namespace clawrl_act {
namespace KERNEL_NS {
namespace {

using namespace clawrl_simd::KERNEL_NS;  // v8, W, load, store, splat, lanes
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

// Loads n < 8 floats, the rest of the vector `fill`.
inline v8 loadPart(const float* x, size_t n, float fill) {
  float pad[W];
  for (size_t i = 0; i < W; i++) pad[i] = i < n ? x[i] : fill;
  return load(pad);
}

inline void storePart(float* y, v8 v, size_t n) {
  float pad[W];
  store(pad, v);
  std::memcpy(y, pad, n * sizeof(float));
}

// One row's softmax(scale·x) over its first n values into y (scale > 0); returns Σ exp(scale·(x −
// max)) and the max in `mx` (the head's log-sum-exp is scale·mx + log of it; attention needs neither).
float softmaxRow(const float* x, float* y, size_t n, float scale, float& mx) {
  const size_t whole = n / W * W;
  v8 mv = splat(-3.4e38f);
  for (size_t i = 0; i < whole; i += W) mv = select(load(x + i) > mv, load(x + i), mv);
  if (whole < n) {
    const v8 t = loadPart(x + whole, n - whole, -3.4e38f);
    mv = select(t > mv, t, mv);
  }
  mx = mv[0];
  for (size_t l = 1; l < W; l++) mx = mv[l] > mx ? mv[l] : mx;
  // exp(scale·(x − max)): scale > 0, so the largest scaled score is scale·max.
  const v8 sv = splat(scale), m = splat(scale * mx);
  v8 acc = splat(0);
  for (size_t i = 0; i < whole; i += W) {
    const v8 e = expv(load(x + i) * sv - m);
    store(y + i, e);
    acc += e;
  }
  float sum = lanes(acc);
  if (whole < n) {
    const v8 e = expv(loadPart(x + whole, n - whole, 0.f) * sv - m);
    storePart(y + whole, e, n - whole);
    for (size_t l = 0; l < n - whole; l++) sum += e[l];
  }
  const v8 inv = splat(1.f / sum);
  for (size_t i = 0; i < whole; i += W) store(y + i, load(y + i) * inv);
  for (size_t i = whole; i < n; i++) y[i] *= inv[0];
  return sum;
}

}  // namespace

void causalSoftmax(const float* s, float* p, size_t T, float scale, size_t r0, size_t r1) {
  for (size_t r = r0; r < r1; r++) {
    const size_t n = r % T + 1;
    float mx;
    softmaxRow(s + r * T, p + r * T, n, scale, mx);
    std::memset(p + r * T + n, 0, (T - n) * sizeof(float));
  }
}

void softmaxRows(const float* z, float* p, float* lse, size_t cols, size_t r0, size_t r1) {
  for (size_t r = r0; r < r1; r++) {
    float mx;
    const float sum = softmaxRow(z + r * cols, p + r * cols, cols, 1.f, mx);
    lse[r] = static_cast<float>(static_cast<double>(mx) + std::log(static_cast<double>(sum)));
  }
}

void causalSoftmaxBackward(const float* p, const float* dp, float* ds, size_t T, float scale, size_t r0, size_t r1) {
  for (size_t r = r0; r < r1; r++) {
    const size_t n = r % T + 1;
    const float *pr = p + r * T, *dr = dp + r * T;
    float* out = ds + r * T;
    const size_t whole = n / W * W;
    v8 acc = splat(0);
    for (size_t i = 0; i < whole; i += W) acc += load(pr + i) * load(dr + i);
    float dot = lanes(acc);
    for (size_t i = whole; i < n; i++) dot += pr[i] * dr[i];
    const v8 sv = splat(scale), dv = splat(dot);
    for (size_t i = 0; i < whole; i += W) store(out + i, sv * load(pr + i) * (load(dr + i) - dv));
    for (size_t i = whole; i < n; i++) out[i] = scale * pr[i] * (dr[i] - dot);
    std::memset(out + n, 0, (T - n) * sizeof(float));
  }
}

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
