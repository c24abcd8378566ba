// AdamW's update of one parameter on the host (see ../../optim/adamw.ts, applyOnHost): the
// same arithmetic as its JavaScript loop, in double precision with each stored value rounded
// to float32, so the two give the same bits (built with -ffp-contract=off: no fused
// multiply-adds that would round differently).
#pragma once
#include <cstddef>

namespace clawrl_optim {

struct AdamWScalars {
  double scale;  // the clipping scale (a float32 value, or exactly 1)
  double beta1, beta2, decay, stepSize, sqrtBc2, eps;
};

// sum + Σ g[i]² in double, added in index order (the loop in adamw.ts carries one running sum
// through every parameter; starting from it keeps the same additions).
double sumSquares(const float* g, size_t n, double sum);

// m' = β1·m + (1−β1)·ĝ, v' = β2·v + (1−β2)·ĝ·ĝ with ĝ = float(g·scale);
// p' = p·decay − stepSize·m' / (√v' / √bc2 + eps). Outputs may not alias inputs.
void adamwUpdate(const float* g, const float* p, const float* m, const float* v, float* pOut, float* mOut, float* vOut, size_t n, const AdamWScalars& s);

}  // namespace clawrl_optim
