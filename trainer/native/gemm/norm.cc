// See norm.h.
#include "norm.h"

#include <cmath>

#include "simd.h"

namespace clawrl_norm {
namespace KERNEL_NS {
namespace {

using namespace clawrl_simd::KERNEL_NS;  // v8, W, load, store, splat, lanes

// Σ x[i]·y[i] over one row, in the fixed order above.
inline float dot(const float* x, const float* y, size_t n) {
  v8 acc = splat(0);
  size_t i = 0;
  for (; i + W <= n; i += W) acc += load(x + i) * load(y + i);
  float s = lanes(acc);
  for (; i < n; i++) s += x[i] * y[i];
  return s;
}

inline float rinv(const float* x, size_t cols, float eps) { return 1.f / std::sqrt(dot(x, x, cols) / static_cast<float>(cols) + eps); }

}  // namespace

void rmsNorm(const float* x, const float* w, float* y, size_t cols, float eps, size_t r0, size_t r1) {
  for (size_t r = r0; r < r1; r++) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const float s = rinv(xr, cols, eps);
    const v8 sv = splat(s);
    size_t i = 0;
    for (; i + W <= cols; i += W) store(yr + i, load(xr + i) * sv * load(w + i));
    for (; i < cols; i++) yr[i] = xr[i] * s * w[i];
  }
}

void rmsNormBackward(const float* x, const float* w, const float* dy, float* dx, size_t cols, float eps, size_t r0, size_t r1) {
  for (size_t r = r0; r < r1; r++) {
    const float *xr = x + r * cols, *dyr = dy + r * cols;
    float* dxr = dx + r * cols;
    const float s = rinv(xr, cols, eps);
    // Σ (w·dy)·x, in the same lane order as dot().
    v8 acc = splat(0);
    size_t i = 0;
    for (; i + W <= cols; i += W) acc += load(w + i) * load(dyr + i) * load(xr + i);
    float wdx = lanes(acc);
    for (; i < cols; i++) wdx += w[i] * dyr[i] * xr[i];
    const float c = s * s * s * wdx / static_cast<float>(cols);
    const v8 sv = splat(s), cv = splat(c);
    i = 0;
    for (; i + W <= cols; i += W) store(dxr + i, sv * load(w + i) * load(dyr + i) - cv * load(xr + i));
    for (; i < cols; i++) dxr[i] = s * w[i] * dyr[i] - c * xr[i];
  }
}

}  // namespace KERNEL_NS
}  // namespace clawrl_norm
