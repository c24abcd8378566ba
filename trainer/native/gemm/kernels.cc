// The products, written once with GCC/Clang vector extensions and compiled once per
// instruction set (KERNEL_NS: generic = the compiler's baseline, SSE2 or NEON; avx2 = with
// -mavx2 -mfma). Both are outer products on 6 x 16 tiles, and neither copies the weight B:
// what costs wasm is XNNPACK packing its right operand (the weight) again on every call.
// - nn (C = A·B, B [K,N]): A's values broadcast against 16-wide rows of B, B's 256 x 256 blocks
//   copied into contiguous 16-column panels first, as BLIS does, where B is 64 columns wide or
//   more (see packPanelsB; a first try, with B and the copy off the cache lines, measured
//   0.85-1.04x at the FFN's widths).
// - tn (C = Aᵀ·B, A stored [K,M], B [K,N]): nn reading A through strides (a LoRA factor's
//   gradient, xᵀ·dy, without a transpose).
// - nt (C = A·Bᵀ, B [N,K]): the weight's values broadcast against 16-row panels of A (the
//   activations, small, packed once per K block), the result stored transposed. Measured on 2
//   cores against dot products along K read in place: 1.4-2x at the trainer's shapes. (Packing
//   B for it too means a transposing copy, and measured 0.75-0.8x.)
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels.h"
#include "simd.h"

namespace clawrl_gemm {
namespace KERNEL_NS {
namespace {

using namespace clawrl_simd::KERNEL_NS;  // v8, W, load, store, splat, lanes

// nt's route through nn for products with few columns: at most 128 of them, and at least 4 rows
// for each. Measured on 2 cores against nt's panels: 3.5x for the LoRA rank's 16 columns,
// 1.1-1.6x for attention's 64-128; 0.84x at [128, 896]·[128, 896]ᵀ (1 row a column: not
// taken). Chosen by the whole product's shape, never by a thread's share of its columns: the
// two routes round differently, and a replay on another thread count must give the same bits.
constexpr size_t NT_NARROW = 128, NT_ROWS_PER_COLUMN = 4;
// The same route for shallow products (k at most 32: a LoRA factor's rank, as in dx += t·Aᵀ),
// whatever their width: the panels' pass over K is too short to pay for the tiles' transposed
// scalar stores. Measured on one core (warm, accumulating): 2.1x at [128, 16]·[896, 16]ᵀ,
// 1.8x at [128, 16]·[4864, 16]ᵀ.
constexpr size_t NT_SHALLOW = 32;

// Packing space (nt's panels, its narrow route's transposed B), kept per thread and only ever
// grown: a fresh allocation per call is mmap'ed and faulted in again, and attention's products
// in a training step are thousands of calls of a few MFLOP (addon.cc runs them on threads that
// persist).
// Two of them: nt's narrow route packs B into slot 0 and then runs nn, which packs into slot 1.
// On a 64-byte line: nn's packed panels are read 16 floats at a time.
float* workspace(size_t floats, size_t slot = 0) {
  thread_local std::vector<float> space[2];
  if (space[slot].size() < floats + 16) space[slot].resize(floats + 16);
  const uintptr_t p = reinterpret_cast<uintptr_t>(space[slot].data());
  return reinterpret_cast<float*>((p + 63) & ~uintptr_t{63});
}

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
// A panel of 16 x 1024 floats (64 KiB, in L2): one pass over K for the model's 896-wide products.
// Each pass over K ends in the tiles' transposed (scalar) stores, and those cost more than the
// panel's L1 misses: against 16 x 256 panels (48 weight rows a sweep), measured on 2 cores,
// 1.3-1.4x at [128, 896]·[4864, 896]ᵀ and the head's [112, 896]·[16384, 896]ᵀ, 1.03-1.16x at
// the other widths, 0.9-1.0x at the 128-wide k/v projections (small).
constexpr size_t NTO_KC = 1024;
constexpr size_t NTO_JB = 24;  // weight rows swept per panel: 24 x 4 KiB

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

// B's block [kLen, j1 - j0) copied as 16-column panels, each [kLen][16] and contiguous. In place,
// a tile's walk down K touches a new row of B, and with a 3.5-19 KiB row pitch a new page, for
// every k; packed, it reads one contiguous, line-aligned panel. Against B in place, one core (a
// C++ harness): 1.03-1.13x for the FFN's and the head's dy·W with B on a line, 1.2-1.6x with B
// 16 bytes past one, 1.4x with 6 rows; 0.92x at 16 columns (the LoRA factor's x·A) and ~1.0x at
// attention's 64: those are not packed. Two threads (bench/native-products.ts --against the
// build before, B in plain arrays): 1.24-1.42x for the FFN's, q/o's and the head's dy·W at
// 128 and 1,296 rows. The same multiply-adds in the same order: the same bits.
// The copy walks B row by row (each row's segment is 1 KiB of contiguous lines) with the rows 8
// ahead prefetched: B comes from memory (a step's weights do not stay in cache), and walked a
// panel at a time, down the rows, every load was a miss on a page of its own with no prefetch.
// bench/native-products.ts --against the copy before: 1.10-1.17x for the FFN's, q/o's and the
// head's dy·W at 128 rows, 1.03-1.12x at 1,296 (both orders of the two builds); in a 1 x 128 step
// of the 0.5B shape (trainer-profile --ab against) 1.09x, dy·W at 114-119 GFLOP/s from 86-93.
// 16 rows ahead measured 0.93-1.0x against 8.
constexpr size_t NN_PACK_MIN_COLUMNS = 128;
constexpr size_t PACK_AHEAD = 8;

void packPanelsB(const float* bk, size_t ldb, size_t kLen, size_t j0, size_t width, float* packed) {
  for (size_t kk = 0; kk < kLen; kk++) {
    if (kk + PACK_AHEAD < kLen)
      for (size_t t = 0; t < width; t += 16) __builtin_prefetch(bk + (kk + PACK_AHEAD) * ldb + j0 + t, 0, 3);
    const float* src = bk + kk * ldb + j0;
    float* dst = packed + kk * 16;
    for (size_t t = 0; t + 16 <= width; t += 16) {
      store(dst + t * kLen, load(src + t));
      store(dst + t * kLen + 8, load(src + t + 8));
    }
  }
}

// C = A·B over B's columns [n0, n1): A read through strides (see outerTile), B and C rows ldb and
// ldc floats apart (nt's narrow route passes a transposed copy of B, narrower than C).
void nnStrided(const float* a, size_t ars, size_t aks, const float* b, size_t ldb, float* c, size_t ldc, size_t m, size_t k, size_t n0, size_t n1, bool accumulate) {
  if (k == 0) {
    if (accumulate) return;
    for (size_t i = 0; i < m; i++) std::memset(c + i * ldc + n0, 0, (n1 - n0) * sizeof(float));
    return;
  }
  const bool pack = n1 - n0 >= NN_PACK_MIN_COLUMNS;
  float* packed = pack ? workspace(NN_KC * NN_NC, 1) : nullptr;
  for (size_t k0 = 0; k0 < k; k0 += NN_KC) {
    const size_t kLen = k - k0 < NN_KC ? k - k0 : NN_KC;
    const bool add = accumulate || k0 > 0;
    for (size_t j0 = n0; j0 < n1; j0 += NN_NC) {
      const size_t j1 = j0 + NN_NC < n1 ? j0 + NN_NC : n1;
      const float* bk = b + k0 * ldb;
      if (!pack) {
        size_t i = 0;
        for (; i + NN_R <= m; i += NN_R) nnRows<NN_R>(a + i * ars + k0 * aks, ars, aks, bk, ldb, c + i * ldc, ldc, kLen, add, j0, j1);
        leftover(m - i, [&](auto r) { nnRows<decltype(r)::value>(a + i * ars + k0 * aks, ars, aks, bk, ldb, c + i * ldc, ldc, kLen, add, j0, j1); });
        continue;
      }
      const size_t full = (j1 - j0) / 16 * 16;
      packPanelsB(bk, ldb, kLen, j0, full, packed);
      // Full tiles from the panels; columns past the last whole 16 from B in place.
      auto rows = [&](auto r, size_t i) {
        constexpr size_t R = decltype(r)::value;
        const float* ai = a + i * ars + k0 * aks;
        for (size_t t = 0; t < full; t += 16) outerTile<R>(ai, ars, aks, packed + t * kLen, 16, c + i * ldc + j0 + t, ldc, kLen, add);
        if (full < j1 - j0) outerEdge(ai, ars, aks, bk + j0 + full, ldb, c + i * ldc + j0 + full, ldc, R, j1 - j0 - full, kLen, add);
      };
      size_t i = 0;
      for (; i + NN_R <= m; i += NN_R) rows(std::integral_constant<size_t, NN_R>{}, i);
      leftover(m - i, [&](auto r) { rows(r, i); });
    }
  }
}

}  // namespace

void nt(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1, bool accumulate) {
  if (k == 0) {
    if (accumulate) return;
    for (size_t i = 0; i < m; i++) std::memset(c + i * n + n0, 0, (n1 - n0) * sizeof(float));
    return;
  }
  if ((n <= NT_NARROW && m >= NT_ROWS_PER_COLUMN * n) || k <= NT_SHALLOW) {
    // Few columns (a LoRA factor's rank, attention's keys) or a short K: B's rows [n0, n1)
    // transposed is a smaller copy than A's panels, and then nn reads A in place.
    const size_t w = n1 - n0;
    float* bt = workspace(w * k);
    for (size_t j = 0; j < w; j++)
      for (size_t kk = 0; kk < k; kk++) bt[kk * w + j] = b[(n0 + j) * k + kk];
    nnStrided(a, k, 1, bt, w, c + n0, n, m, k, 0, w, accumulate);
    return;
  }
  const size_t nPanels = (m + 15) / 16;
  float* panels = workspace(nPanels * 16 * (k < NTO_KC ? k : NTO_KC));
  for (size_t k0 = 0; k0 < k; k0 += NTO_KC) {
    const size_t kLen = k - k0 < NTO_KC ? k - k0 : NTO_KC;
    const bool add = accumulate || k0 > 0;
    packPanels(a, m, k, k0, kLen, panels);
    for (size_t j0 = n0; j0 < n1; j0 += NTO_JB) {
      const size_t j1 = j0 + NTO_JB < n1 ? j0 + NTO_JB : n1;
      for (size_t p = 0; p < nPanels; p++) {
        const size_t iCount = m - p * 16 < 16 ? m - p * 16 : 16;
        ntPanel(panels + p * kLen * 16, b + k0, k, c + p * 16 * n, n, kLen, add, iCount, j0, j1);
      }
    }
  }
}

void nn(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1, bool accumulate) { nnStrided(a, k, 1, b, n, c, n, m, k, n0, n1, accumulate); }

void tn(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1, bool accumulate) { nnStrided(a, 1, m, b, n, c, n, m, k, n0, n1, accumulate); }

}  // namespace KERNEL_NS
}  // namespace clawrl_gemm
