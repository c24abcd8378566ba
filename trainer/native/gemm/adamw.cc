// See adamw.h. The expressions keep the JavaScript loop's order of operations exactly.
#include "adamw.h"

#include <cmath>

namespace clawrl_optim {

double sumSquares(const float* g, size_t n, double sum) {
  double sq = sum;
  for (size_t i = 0; i < n; i++) sq += static_cast<double>(g[i]) * g[i];
  return sq;
}

void adamwUpdate(const float* g, const float* p, const float* m, const float* v, float* pOut, float* mOut, float* vOut, size_t n, const AdamWScalars& s) {
  const double ob1 = 1 - s.beta1, ob2 = 1 - s.beta2;
  for (size_t i = 0; i < n; i++) {
    const double gi = static_cast<float>(g[i] * s.scale);
    const float mi = static_cast<float>(s.beta1 * m[i] + ob1 * gi);
    const float vi = static_cast<float>(s.beta2 * v[i] + ob2 * gi * gi);
    mOut[i] = mi;
    vOut[i] = vi;
    pOut[i] = static_cast<float>(p[i] * s.decay - (s.stepSize * mi) / (std::sqrt(static_cast<double>(vi)) / s.sqrtBc2 + s.eps));
  }
}

}  // namespace clawrl_optim
