#include <algorithm>
#include <cmath>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

template <class T>
void layer_norm(int64_t rows, int64_t d, const T* x, const T* gamma, const T* beta, double eps, T* y, T* mean,
                T* rstd) {
#pragma omp parallel for schedule(static) if (rows * d >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * d;
    T* yr = y + r * d;
    // Two passes in double: mean, then the variance around it (no cancellation). Vectorized: the
    // sums run in SIMD lanes (a fixed order for a given build, so results stay reproducible).
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < d; ++i) s += double(xr[i]);
    const double mu = s / double(d);
    double ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int64_t i = 0; i < d; ++i) ss += (double(xr[i]) - mu) * (double(xr[i]) - mu);
    const double rs = 1.0 / std::sqrt(ss / double(d) + eps);
    const T m = static_cast<T>(mu), rsd = static_cast<T>(rs);
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * rsd * gamma[i] + beta[i];
    mean[r] = m;
    rstd[r] = rsd;
  }
}

template <class T>
void layer_norm_backward(int64_t rows, int64_t d, const T* dy, const T* x, const T* gamma, const T* mean,
                         const T* rstd, T* dx, T* dgamma, T* dbeta) {
  // dx: row-parallel.
#pragma omp parallel for schedule(static) if (rows * d >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const T* dyr = dy + r * d;
    const T* xr = x + r * d;
    T* dxr = dx + r * d;
    const T m = mean[r], rs = rstd[r];
    double sum_g = 0, sum_gx = 0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
    for (int64_t i = 0; i < d; ++i) {
      const double g = double(dyr[i]) * gamma[i];
      sum_g += g;
      sum_gx += g * (double(xr[i] - m) * rs);
    }
    const T mean_g = static_cast<T>(sum_g / double(d)), mean_gx = static_cast<T>(sum_gx / double(d));
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) {
      const T xhat = (xr[i] - m) * rs;
      dxr[i] += rs * (dyr[i] * gamma[i] - mean_g - xhat * mean_gx);
    }
  }
  // dgamma, dbeta: column blocks across threads, rows summed in order.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (d + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (rows * d >= (1 << 15))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(d, c0 + kBlock);
    T acc_g[kBlock] = {}, acc_b[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const T* dyr = dy + r * d;
      const T* xr = x + r * d;
      const T m = mean[r], rs = rstd[r];
#pragma omp simd
      for (int64_t c = c0; c < c1; ++c) {
        acc_g[c - c0] += dyr[c] * ((xr[c] - m) * rs);
        acc_b[c - c0] += dyr[c];
      }
    }
    for (int64_t c = c0; c < c1; ++c) {
      dgamma[c] += acc_g[c - c0];
      dbeta[c] += acc_b[c - c0];
    }
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_LAYER_NORM)

TFM_SIMD_END
