// The 8-float vector and its loads, stores and broadcast, shared by the kernels compiled once per
// instruction set (kernels.cc, activations.cc): GCC/Clang vector extensions, which the compiler
// lowers to AVX2 where the file is built with -mavx2 and to pairs of SSE2 or NEON registers
// otherwise. KERNEL_NS keeps the two builds' inline functions apart.
#pragma once

#include <cstring>

#ifndef KERNEL_NS
#define KERNEL_NS generic
#endif

namespace clawrl_simd {
namespace KERNEL_NS {

typedef float v8 __attribute__((vector_size(32)));
constexpr size_t W = 8;

// Through memcpy: unaligned, and without the aliasing a pointer cast would imply.
inline v8 load(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, v8 v) { std::memcpy(p, &v, sizeof v); }
inline v8 splat(float x) { return v8{x, x, x, x, x, x, x, x}; }

// The 8 lanes added in one fixed order, pairwise (0+4, 1+5, 2+6, 3+7, then halves): a row's sum
// must not depend on which thread or code path computed it.
inline float lanes(v8 v) {
  const float a = v[0] + v[4], b = v[1] + v[5], c = v[2] + v[6], d = v[3] + v[7];
  return (a + c) + (b + d);
}

}  // namespace KERNEL_NS
}  // namespace clawrl_simd
