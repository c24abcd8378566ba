// Single-precision matrix products for the CPU trainer (see ../gemm.ts for why they exist).
// Row-major throughout. Each function computes a column range [n0, n1) of C, so callers can
// split one product across threads without sharing any output.
#pragma once
#include <cstddef>

namespace clawrl_gemm {

// nt: C[M,N] = A[M,K] · B[N,K]ᵀ (B as stored by GGUF: [out, in]); nn: C = A[M,K] · B[K,N];
// tn: C = A[K,M]ᵀ · B[K,N].
// With `accumulate` C += the product (C's values are read first), else C = the product.
using ProductFn = void (*)(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1, bool accumulate);

namespace generic {
void nt(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1, bool accumulate);
void nn(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1, bool accumulate);
void tn(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1, bool accumulate);
}  // namespace generic

#if defined(__x86_64__) || defined(_M_X64)
namespace avx2 {
void nt(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1, bool accumulate);
void nn(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1, bool accumulate);
void tn(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, size_t n0, size_t n1, bool accumulate);
}  // namespace avx2
#endif

}  // namespace clawrl_gemm
