// The products, written once with GCC/Clang vector extensions and compiled once per
// instruction set (KERNEL_NS: generic = the compiler's baseline, SSE2 or NEON; avx2 = with
// -mavx2 -mfma). Two shapes, chosen so neither operand is ever repacked:
// - nt (C = A·Bᵀ, B [N,K]): a tile of dot products along K, both operands read in place, row
//   by row. The weight is never transposed or copied, which is what costs wasm (XNNPACK packs
//   its right operand again on every call).
// - nn (C = A·B, B [K,N]): broadcast A's values against 16-wide rows of B (outer products).
#include <cstring>

#include "kernels.h"

#ifndef KERNEL_NS
#define KERNEL_NS generic
#endif

namespace clawrl_gemm {
namespace KERNEL_NS {
namespace {

typedef float v8 __attribute__((vector_size(32)));

inline v8 load(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, v8 v) { std::memcpy(p, &v, sizeof v); }
inline v8 splat(float x) { return v8{x, x, x, x, x, x, x, x}; }
inline float hsum(v8 v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// Tile sizes: what keeps the accumulators, one row of each operand and a temporary within 16
// vector registers (AVX2 has 16).
#ifndef NT_TILE_R
#define NT_TILE_R 3
#define NT_TILE_S 4
#endif
#ifndef NT_KC_V
#define NT_KC_V 512
#define NT_JB_V 64
#endif
constexpr size_t NT_R = NT_TILE_R, NT_S = NT_TILE_S;  // nt: 12 accumulators
constexpr size_t NN_R = 6;            // nn: 6 rows x 16 columns = 12 accumulators
constexpr size_t NT_KC = NT_KC_V;
constexpr size_t NT_JB = NT_JB_V;
constexpr size_t NN_KC = 256, NN_NC = 256;  // B block of 256 x 256 floats (256 KiB) in L2

template <size_t R, size_t S>
inline void dotTile(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t kLen, bool add) {
  v8 acc[R][S] = {};
  size_t k = 0;
  for (; k + 8 <= kLen; k += 8) {
    v8 av[R];
    for (size_t r = 0; r < R; r++) av[r] = load(a + r * lda + k);
    for (size_t s = 0; s < S; s++) {
      const v8 bv = load(b + s * ldb + k);
      for (size_t r = 0; r < R; r++) acc[r][s] += av[r] * bv;
    }
  }
  for (size_t r = 0; r < R; r++)
    for (size_t s = 0; s < S; s++) {
      float t = hsum(acc[r][s]);
      for (size_t kk = k; kk < kLen; kk++) t += a[r * lda + kk] * b[s * ldb + kk];
      c[r * ldc + s] = add ? c[r * ldc + s] + t : t;
    }
}

// Rows [i, i+R) of the nt product against weight rows [j0, j1) (edges: smaller S).
template <size_t R>
inline void ntRows(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t kLen, bool add, size_t j0, size_t j1) {
  size_t j = j0;
  for (; j + NT_S <= j1; j += NT_S) dotTile<R, NT_S>(a, lda, b + j * ldb, ldb, c + j, ldc, kLen, add);
  for (; j < j1; j++) dotTile<R, 1>(a, lda, b + j * ldb, ldb, c + j, ldc, kLen, add);
}

template <size_t R>
inline void outerTile(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t kLen, bool add) {
  v8 acc[R][2];
  for (size_t r = 0; r < R; r++) {
    acc[r][0] = add ? load(c + r * ldc) : splat(0);
    acc[r][1] = add ? load(c + r * ldc + 8) : splat(0);
  }
  for (size_t k = 0; k < kLen; k++) {
    const v8 b0 = load(b + k * ldb), b1 = load(b + k * ldb + 8);
    for (size_t r = 0; r < R; r++) {
      const v8 av = splat(a[r * lda + k]);
      acc[r][0] += av * b0;
      acc[r][1] += av * b1;
    }
  }
  for (size_t r = 0; r < R; r++) {
    store(c + r * ldc, acc[r][0]);
    store(c + r * ldc + 8, acc[r][1]);
  }
}

// Columns narrower than 16 at the right edge.
inline void outerEdge(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t rows, size_t cols, size_t kLen, bool add) {
  for (size_t r = 0; r < rows; r++)
    for (size_t s = 0; s < cols; s++) {
      float t = add ? c[r * ldc + s] : 0.f;
      for (size_t k = 0; k < kLen; k++) t += a[r * lda + k] * b[k * ldb + s];
      c[r * ldc + s] = t;
    }
}

template <size_t R>
inline void nnRows(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t kLen, bool add, size_t j0, size_t j1) {
  size_t j = j0;
  for (; j + 16 <= j1; j += 16) outerTile<R>(a, lda, b + j, ldb, c + j, ldc, kLen, add);
  if (j < j1) outerEdge(a, lda, b + j, ldb, c + j, ldc, R, j1 - j, kLen, add);
}

}  // namespace

void nt(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1) {
  if (k == 0) {
    for (size_t i = 0; i < m; i++) std::memset(c + i * n + n0, 0, (n1 - n0) * sizeof(float));
    return;
  }
  for (size_t k0 = 0; k0 < k; k0 += NT_KC) {
    const size_t kLen = k - k0 < NT_KC ? k - k0 : NT_KC;
    const bool add = k0 > 0;
    for (size_t j0 = n0; j0 < n1; j0 += NT_JB) {
      const size_t j1 = j0 + NT_JB < n1 ? j0 + NT_JB : n1;
      size_t i = 0;
      for (; i + NT_R <= m; i += NT_R) ntRows<NT_R>(a + i * k + k0, k, b + k0, k, c + i * n, n, kLen, add, j0, j1);
      for (; i < m; i++) ntRows<1>(a + i * k + k0, k, b + k0, k, c + i * n, n, kLen, add, j0, j1);
    }
  }
}

void nn(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1) {
  if (k == 0) {
    for (size_t i = 0; i < m; i++) std::memset(c + i * n + n0, 0, (n1 - n0) * sizeof(float));
    return;
  }
  for (size_t k0 = 0; k0 < k; k0 += NN_KC) {
    const size_t kLen = k - k0 < NN_KC ? k - k0 : NN_KC;
    const bool add = k0 > 0;
    for (size_t j0 = n0; j0 < n1; j0 += NN_NC) {
      const size_t j1 = j0 + NN_NC < n1 ? j0 + NN_NC : n1;
      const float* bk = b + k0 * n;
      size_t i = 0;
      for (; i + NN_R <= m; i += NN_R) nnRows<NN_R>(a + i * k + k0, k, bk, n, c + i * n, n, kLen, add, j0, j1);
      switch (m - i) {
        case 5: nnRows<5>(a + i * k + k0, k, bk, n, c + i * n, n, kLen, add, j0, j1); break;
        case 4: nnRows<4>(a + i * k + k0, k, bk, n, c + i * n, n, kLen, add, j0, j1); break;
        case 3: nnRows<3>(a + i * k + k0, k, bk, n, c + i * n, n, kLen, add, j0, j1); break;
        case 2: nnRows<2>(a + i * k + k0, k, bk, n, c + i * n, n, kLen, add, j0, j1); break;
        case 1: nnRows<1>(a + i * k + k0, k, bk, n, c + i * n, n, kLen, add, j0, j1); break;
        default: break;
      }
    }
  }
}

}  // namespace KERNEL_NS
}  // namespace clawrl_gemm
