#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "ops/cpu/isa.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/signal_shield.h"

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

// At the AVX2 level oneDNN 2.6's sgemm loses to OpenBLAS's Haswell kernels on the weight gradients
// (Aᵀ·B) and on wide outputs. Best of 5, GFLOP/s, 2 threads, OpenBLAS / oneDNN (AMD EPYC Zen 4
// forced to avx2): dyᵀ·x 1024 × 256 × 2048 (the small model's first feed-forward layer) 203 / 87
// (and 166 through widening_weight_gradient's transposed form), 256 × 1024 × 2048 212 / 166, 768 ×
// 256 × 2048 205 / 194, 8000 × 256 × 2048 198 / 192; x·Wᵀ 2048 × 8000 × 256 215 / 195. oneDNN stays
// ahead for the narrower x·Wᵀ and dy·W (2048 × 256 × 256: 160 / 198, 2048 × 256 × 1024 162 / 180).
namespace {
bool blas_wins_at_avx2(bool ta, int64_t n) { return isa() == Isa::kAvx2 && (ta || n >= 4096); }
}  // namespace

bool large_float_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, bool ta,
                      const float* b, int64_t ldb, bool tb, float beta, float* c, int64_t ldc) {
  // Inside a parallel region (translate's parallel batches) oneDNN runs on the calling thread, as
  // OpenBLAS does there: still the faster of the two at these shapes.
  if (m < kOneDnnMinRows || n < 64 || k < 64 || blas_wins_at_avx2(ta, n)) return false;
  isa();  // a forced level caps oneDNN before its first product
  const SignalShield shield;  // its kernels point the stack pointer at the heap (ops/cpu/signal_shield.h)
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
}
bool large_float_gemm(int64_t, int64_t, int64_t, double, const double*, int64_t, bool, const double*, int64_t, bool,
                      double, double*, int64_t) {
  return false;
}

// The weight gradient of a layer that widens (dW = dyᵀ·x with out ≥ 2·in, the feed-forward
// network's first layer: 2048 × 512 in base, 1024 × 256 in small): oneDNN's kernel for this
// transposed-A shape ran 1.15–1.6× slower than for the same product transposed, dWᵀ = xᵀ·dy
// (docs/performance.md; not so for 8000 × 512 or 512 × 2048, where the transposed one
// was slower, hence the bounds). So compute dWᵀ into scratch and add it back transposed, in cache-sized tiles.
bool widening_weight_gradient(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, bool ta,
                              const float* b, int64_t ldb, bool tb, float beta, float* c, int64_t ldc) {
  if (!ta || tb || m < 2 * n || m * n > (int64_t{1} << 20) || k < kOneDnnMinRows || n < 64 || omp_in_parallel() ||
      blas_wins_at_avx2(ta, n))
    return false;
  isa();
  thread_local std::vector<float> scratch;
  scratch.resize(static_cast<size_t>(m * n));
  float* t = scratch.data();  // [n, m] = alpha · Bᵀ · A
  {
    const SignalShield shield;
    if (dnnl_sgemm('T', 'N', n, m, k, alpha, b, ldb, a, lda, 0.0f, t, m) != dnnl_success) return false;
  }
  constexpr int64_t kTile = 32;
#pragma omp parallel for schedule(static)
  for (int64_t i0 = 0; i0 < m; i0 += kTile)
    for (int64_t j0 = 0; j0 < n; j0 += kTile)
      for (int64_t i = i0; i < std::min(m, i0 + kTile); ++i)
        for (int64_t j = j0; j < std::min(n, j0 + kTile); ++j)
          c[i * ldc + j] = (beta == 0.0f ? 0.0f : beta * c[i * ldc + j]) + t[j * m + i];
  return true;
}
bool widening_weight_gradient(int64_t, int64_t, int64_t, double, const double*, int64_t, bool, const double*, int64_t,
                              bool, double, double*, int64_t) {
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
    if (widening_weight_gradient(m, n, k, alpha, a, lda, ta, b, ldb, tb, beta, c, n)) return;
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
