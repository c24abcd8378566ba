// Rotary position embedding on the host (see ../../model/rope.ts): one pass where tfjs runs ~10
// kernels forward (slices, four multiplies, concat) and as many backward, for queries and keys of
// every block. Its gradient is the rotation by −θ: the same pass with the sines negated.
// Compiled once per instruction set as kernels.cc is; one thread (a [rows, heads, 64] tensor).
#pragma once
#include <cstddef>

namespace clawrl_rope {

struct RopeShape {
  size_t rows;     // B·T rows of x, each [heads, headDim]
  size_t tableRows;  // T: row r uses table row r mod T (a padded grid's tables broadcast over B)
  size_t heads, headDim, nRot;  // the first nRot of each head's headDim are rotated, the rest copied
  bool neox;     // pairs (i, i + nRot/2) (qwen2, qwen3); else adjacent pairs (2i, 2i + 1) (llama)
  bool inverse;  // rotate by −θ (the backward)
};

// out = x rotated; cos and sin are [tableRows, nRot/2]. out may be x itself.
using RopeFn = void (*)(const float* x, const float* cos, const float* sin, float* out, const RopeShape& s);

namespace generic {
void rope(const float* x, const float* cos, const float* sin, float* out, const RopeShape& s);
}
#if defined(__x86_64__) || defined(_M_X64)
namespace avx2 {
void rope(const float* x, const float* cos, const float* sin, float* out, const RopeShape& s);
}
#endif

}  // namespace clawrl_rope
