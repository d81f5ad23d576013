#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>

#include "ops/cpu/kernels.h"

namespace tfm::cpu {

namespace {
void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
              b, ldb, beta, c, ldc);
}
void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
               const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
              b, ldb, beta, c, ldc);
}
}  // namespace

// Large float products go to oneDNN, whose JIT kernels beat OpenBLAS at the training shapes (e.g.
// 2048×8000×512: 228 vs 194 GFLOP/s on 2 Ice Lake cores); OpenBLAS stays faster for the few rows
// of a decoding step and does double precision. Measured in docs/performance.md.
constexpr int64_t kOneDnnMinRows = 512;

bool large_float_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, bool ta,
                      const float* b, int64_t ldb, bool tb, float beta, float* c, int64_t ldc) {
  if (m < kOneDnnMinRows || n < 64 || k < 64 || omp_in_parallel()) return false;
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
}
bool large_float_gemm(int64_t, int64_t, int64_t, double, const double*, int64_t, bool, const double*, int64_t, bool,
                      double, double*, int64_t) {
  return false;
}

template <class T>
void gemm_ld(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
             int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  blas_gemm(ta, tb, m, n, k, alpha, a, std::max<int64_t>(1, lda), b, std::max<int64_t>(1, ldb), beta, c,
            std::max<int64_t>(1, ldc));
}

template <class T>
void gemm(int64_t batch, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t stride_a,
          const T* b, int64_t stride_b, T beta, T* c, int64_t stride_c) {
  if (m == 0 || n == 0) return;
  // BLAS wants leading dimensions of at least 1, also for empty matrices.
  const int64_t lda = std::max<int64_t>(1, ta ? m : k), ldb = std::max<int64_t>(1, tb ? k : n);
  if (batch == 1) {
    if (large_float_gemm(m, n, k, alpha, a, lda, ta, b, ldb, tb, beta, c, n)) return;
    blas_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, n);  // BLAS threads itself
    return;
  }
  // Many small products: one per thread; OpenBLAS runs single-threaded inside a parallel region.
#pragma omp parallel for schedule(static) if (batch * m * n * std::max<int64_t>(k, 1) >= (1 << 16))
  for (int64_t i = 0; i < batch; ++i)
    blas_gemm(ta, tb, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta, c + i * stride_c, n);
}

#define INSTANTIATE(T)                                                                                    \
  template void gemm<T>(int64_t, bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, \
                        int64_t, T, T*, int64_t); \
  template void gemm_ld<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*, \
                           int64_t);
TFM_INSTANTIATE_FLOAT(INSTANTIATE)

}  // namespace tfm::cpu
