// The products, written once with GCC/Clang vector extensions and compiled once per
// instruction set (KERNEL_NS: generic = the compiler's baseline, SSE2 or NEON; avx2 = with
// -mavx2 -mfma). Both are outer products on 6 x 16 tiles, and neither copies the weight B:
// what costs wasm is XNNPACK packing its right operand (the weight) again on every call.
// - nn (C = A·B, B [K,N]): A's values broadcast against 16-wide rows of B, read in place.
// - tn (C = Aᵀ·B, A stored [K,M], B [K,N]): nn reading A through strides (a LoRA factor's
//   gradient, xᵀ·dy, without a transpose).
// - nt (C = A·Bᵀ, B [N,K]): the weight's values broadcast against 16-row panels of A (the
//   activations, small, packed once per K block), the result stored transposed. Measured on 2
//   cores against dot products along K read in place: 1.4-2x at the trainer's shapes.
#include <cstring>
#include <type_traits>
#include <vector>

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

// Tile sizes: 12 accumulators (6 rows x 16 columns), two operand vectors and a broadcast
// within AVX2's 16 vector registers.
constexpr size_t NN_R = 6;
constexpr size_t NN_KC = 256, NN_NC = 256;  // B block of 256 x 256 floats (256 KiB) in L2

// A is read through strides: element (r, k) at a[r * ars + k * aks]; nn's A [m, k] has
// (ars, aks) = (k, 1), tn's Aᵀ stored [k, m] has (1, m): both broadcast one value per (r, k).
template <size_t R>
inline void outerTile(const float* a, size_t ars, size_t aks, const float* b, size_t ldb, float* c, size_t ldc, size_t kLen, bool add) {
  v8 acc[R][2];
  for (size_t r = 0; r < R; r++) {
    acc[r][0] = add ? load(c + r * ldc) : splat(0);
    acc[r][1] = add ? load(c + r * ldc + 8) : splat(0);
  }
  for (size_t k = 0; k < kLen; k++) {
    const v8 b0 = load(b + k * ldb), b1 = load(b + k * ldb + 8);
    for (size_t r = 0; r < R; r++) {
      const v8 av = splat(a[r * ars + k * aks]);
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
inline void outerEdge(const float* a, size_t ars, size_t aks, const float* b, size_t ldb, float* c, size_t ldc, size_t rows, size_t cols, size_t kLen, bool add) {
  for (size_t r = 0; r < rows; r++)
    for (size_t s = 0; s < cols; s++) {
      float t = add ? c[r * ldc + s] : 0.f;
      for (size_t k = 0; k < kLen; k++) t += a[r * ars + k * aks] * b[k * ldb + s];
      c[r * ldc + s] = t;
    }
}

template <size_t R>
inline void nnRows(const float* a, size_t ars, size_t aks, const float* b, size_t ldb, float* c, size_t ldc, size_t kLen, bool add, size_t j0, size_t j1) {
  size_t j = j0;
  for (; j + 16 <= j1; j += 16) outerTile<R>(a, ars, aks, b + j, ldb, c + j, ldc, kLen, add);
  if (j < j1) outerEdge(a, ars, aks, b + j, ldb, c + j, ldc, R, j1 - j, kLen, add);
}

// nt as outer products: rows [i0, i0+16) of A packed as panel[k][16] (zero past m); R rows
// of B broadcast against it; the 16 x R result stored transposed into C. B (the weight) is read
// in place, row by row; only A (the activations, small) is copied.
constexpr size_t NTO_KC = 256;  // a panel of 16 x 256 floats (16 KiB) stays in L1
constexpr size_t NTO_JB = 48;   // weight rows swept per panel: 48 x 1 KiB

void packPanels(const float* a, size_t m, size_t k, size_t k0, size_t kLen, float* panels) {
  const size_t nPanels = (m + 15) / 16;
  for (size_t p = 0; p < nPanels; p++) {
    float* dst = panels + p * kLen * 16;
    for (size_t ii = 0; ii < 16; ii++) {
      const size_t i = p * 16 + ii;
      if (i < m) {
        const float* src = a + i * k + k0;
        for (size_t kk = 0; kk < kLen; kk++) dst[kk * 16 + ii] = src[kk];
      } else {
        for (size_t kk = 0; kk < kLen; kk++) dst[kk * 16 + ii] = 0.f;
      }
    }
  }
}

template <size_t R>
inline void outerTileT(const float* panel, const float* b, size_t ldb, float* c, size_t ldc, size_t kLen, bool add, size_t iCount) {
  v8 acc[R][2] = {};
  for (size_t k = 0; k < kLen; k++) {
    const v8 p0 = load(panel + k * 16), p1 = load(panel + k * 16 + 8);
    for (size_t r = 0; r < R; r++) {
      const v8 bv = splat(b[r * ldb + k]);
      acc[r][0] += bv * p0;
      acc[r][1] += bv * p1;
    }
  }
  for (size_t i = 0; i < iCount; i++)
    for (size_t r = 0; r < R; r++) {
      const float v = acc[r][i / 8][i % 8];
      c[i * ldc + r] = add ? c[i * ldc + r] + v : v;
    }
}

/**
 * Runs `tile` with the rows a 6-wide tile loop left over (1 to 5) as a compile-time count, so
 * each remainder gets its own unrolled tile; 0 runs nothing.
 */
template <class Tile>
inline void leftover(size_t rows, Tile&& tile) {
  switch (rows) {
    case 5: tile(std::integral_constant<size_t, 5>{}); break;
    case 4: tile(std::integral_constant<size_t, 4>{}); break;
    case 3: tile(std::integral_constant<size_t, 3>{}); break;
    case 2: tile(std::integral_constant<size_t, 2>{}); break;
    case 1: tile(std::integral_constant<size_t, 1>{}); break;
    default: break;
  }
}

inline void ntPanel(const float* panel, const float* b, size_t ldb, float* c, size_t ldc, size_t kLen, bool add, size_t iCount, size_t j0, size_t j1) {
  size_t j = j0;
  for (; j + 6 <= j1; j += 6) outerTileT<6>(panel, b + j * ldb, ldb, c + j, ldc, kLen, add, iCount);
  leftover(j1 - j, [&](auto r) { outerTileT<decltype(r)::value>(panel, b + j * ldb, ldb, c + j, ldc, kLen, add, iCount); });
}

}  // namespace

void nt(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1) {
  if (k == 0) {
    for (size_t i = 0; i < m; i++) std::memset(c + i * n + n0, 0, (n1 - n0) * sizeof(float));
    return;
  }
  const size_t nPanels = (m + 15) / 16;
  std::vector<float> panels(nPanels * 16 * (k < NTO_KC ? k : NTO_KC));
  for (size_t k0 = 0; k0 < k; k0 += NTO_KC) {
    const size_t kLen = k - k0 < NTO_KC ? k - k0 : NTO_KC;
    const bool add = k0 > 0;
    packPanels(a, m, k, k0, kLen, panels.data());
    for (size_t j0 = n0; j0 < n1; j0 += NTO_JB) {
      const size_t j1 = j0 + NTO_JB < n1 ? j0 + NTO_JB : n1;
      for (size_t p = 0; p < nPanels; p++) {
        const size_t iCount = m - p * 16 < 16 ? m - p * 16 : 16;
        ntPanel(panels.data() + p * kLen * 16, b + k0, k, c + p * 16 * n, n, kLen, add, iCount, j0, j1);
      }
    }
  }
}

namespace {
// C = A·B over B's columns [n0, n1), A read through strides (see outerTile).
void nnStrided(const float* a, size_t ars, size_t aks, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1) {
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
      for (; i + NN_R <= m; i += NN_R) nnRows<NN_R>(a + i * ars + k0 * aks, ars, aks, bk, n, c + i * n, n, kLen, add, j0, j1);
      leftover(m - i, [&](auto r) { nnRows<decltype(r)::value>(a + i * ars + k0 * aks, ars, aks, bk, n, c + i * n, n, kLen, add, j0, j1); });
    }
  }
}
}  // namespace

void nn(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1) { nnStrided(a, k, 1, b, c, m, n, k, n0, n1); }

void tn(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1) { nnStrided(a, 1, m, b, c, m, n, k, n0, n1); }

}  // namespace KERNEL_NS
}  // namespace clawrl_gemm
