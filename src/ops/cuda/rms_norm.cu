// RMSNorm over rows (ops/rms_norm.h): one block per row, the gradient of gamma summed over the rows
// in a fixed order.
#include <cuda_runtime.h>

#include "ops/cuda/column_sums.cuh"
#include "ops/cuda/common.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {
namespace {

__global__ void rms_norm_kernel(int64_t d, const float* x, const float* gamma, double eps, float* y, float* rstd) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * d;
  float* yr = y + r * d;
  double ss = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) ss += double(xr[i]) * xr[i];
  const float rs = static_cast<float>(1.0 / sqrt(block_sum(ss, shared) / double(d) + eps));
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = xr[i] * rs * gamma[i];
  if (threadIdx.x == 0) rstd[r] = rs;
}

__global__ void rms_norm_backward_kernel(int64_t d, const float* dy, const float* x, const float* gamma,
                                         const float* rstd, float* dx) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float* dyr = dy + r * d;
  const float* xr = x + r * d;
  float* dxr = dx + r * d;
  const float rs = rstd[r];
  double sum_gx = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) sum_gx += double(dyr[i]) * gamma[i] * (double(xr[i]) * rs);
  const float mean_gx = static_cast<float>(block_sum(sum_gx, shared) / double(d));
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) dxr[i] += rs * (dyr[i] * gamma[i] - xr[i] * rs * mean_gx);
}

}  // namespace

void rms_norm(int64_t rows, int64_t d, const float* x, const float* gamma, double eps, float* y, float* rstd) {
  if (rows <= 0) return;
  rms_norm_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(d, x, gamma, eps, y, rstd);
  launched("rms_norm");
}

void rms_norm_backward(int64_t rows, int64_t d, const float* dy, const float* x, const float* gamma,
                       const float* rstd, float* dx, float* dgamma) {
  if (rows <= 0) return;
  rms_norm_backward_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(d, dy, x, gamma, rstd, dx);
  launched("rms_norm_backward");
  add_column_sums("rms_norm_backward", rows, d, [=] __device__(int64_t r, int64_t c) {
    return double(dy[r * d + c] * (x[r * d + c] * rstd[r]));
  }, dgamma);
}

}  // namespace tfm::cuda
