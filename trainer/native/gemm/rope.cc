// See rope.h. Plain loops over contiguous halves: the compiler vectorizes them.
#include "rope.h"

#ifndef KERNEL_NS
#define KERNEL_NS generic
#endif

namespace clawrl_rope {
namespace KERNEL_NS {

void rope(const float* x, const float* cos, const float* sin, float* out, const RopeShape& s) {
  const size_t half = s.nRot / 2;
  const float sign = s.inverse ? -1.f : 1.f;
  for (size_t r = 0; r < s.rows; r++) {
    const float* c = cos + (r % s.tableRows) * half;
    const float* sn = sin + (r % s.tableRows) * half;
    for (size_t h = 0; h < s.heads; h++) {
      const float* xi = x + (r * s.heads + h) * s.headDim;
      float* o = out + (r * s.heads + h) * s.headDim;
      if (s.neox) {
        for (size_t i = 0; i < half; i++) {
          const float a = xi[i], b = xi[i + half], si = sign * sn[i];
          o[i] = a * c[i] - b * si;
          o[i + half] = a * si + b * c[i];
        }
      } else {
        for (size_t i = 0; i < half; i++) {
          const float a = xi[2 * i], b = xi[2 * i + 1], si = sign * sn[i];
          o[2 * i] = a * c[i] - b * si;
          o[2 * i + 1] = a * si + b * c[i];
        }
      }
      if (o != xi)
        for (size_t d = s.nRot; d < s.headDim; d++) o[d] = xi[d];
    }
  }
}

}  // namespace KERNEL_NS
}  // namespace clawrl_rope
