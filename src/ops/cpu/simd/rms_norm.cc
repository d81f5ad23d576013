// RMSNorm's CPU kernels (ops/rms_norm.h): rows in parallel, each row's sums in double in a fixed
// order; the gradient of gamma summed over the rows by column blocks, rows in order.
#include <algorithm>
#include <cmath>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

template <class T>
void rms_norm(int64_t rows, int64_t d, const T* x, const T* gamma, double eps, T* y, T* rstd) {
#pragma omp parallel for schedule(static) if (rows * d >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * d;
    T* yr = y + r * d;
    double ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int64_t i = 0; i < d; ++i) ss += double(xr[i]) * double(xr[i]);
    const T rs = static_cast<T>(1.0 / std::sqrt(ss / double(d) + eps));
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * rs * gamma[i];
    rstd[r] = rs;
  }
}

template <class T>
void rms_norm_backward(int64_t rows, int64_t d, const T* dy, const T* x, const T* gamma, const T* rstd, T* dx,
                       T* dgamma) {
#pragma omp parallel for schedule(static) if (rows * d >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const T* dyr = dy + r * d;
    const T* xr = x + r * d;
    T* dxr = dx + r * d;
    const T rs = rstd[r];
    double sum_gx = 0;
#pragma omp simd reduction(+ : sum_gx)
    for (int64_t i = 0; i < d; ++i) sum_gx += double(dyr[i]) * gamma[i] * (double(xr[i]) * rs);
    const T mean_gx = static_cast<T>(sum_gx / double(d));
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) dxr[i] += rs * (dyr[i] * gamma[i] - xr[i] * rs * mean_gx);
  }
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (d + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (rows * d >= (1 << 15))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(d, c0 + kBlock);
    T acc[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const T* dyr = dy + r * d;
      const T* xr = x + r * d;
      const T rs = rstd[r];
#pragma omp simd
      for (int64_t c = c0; c < c1; ++c) acc[c - c0] += dyr[c] * (xr[c] * rs);
    }
    for (int64_t c = c0; c < c1; ++c) dgamma[c] += acc[c - c0];
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_RMS_NORM)

TFM_SIMD_END
