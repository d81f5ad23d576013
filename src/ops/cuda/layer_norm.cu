// Layer norm over rows (ops/layer_norm.h): one block per row, the gradients of gamma and beta summed
// over the rows in a fixed order.
#include <cuda_runtime.h>

#include "ops/cuda/column_sums.cuh"
#include "ops/cuda/common.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {
namespace {

__global__ void layer_norm_kernel(int64_t d, const float* x, const float* gamma, const float* beta, double eps,
                                  float* y, float* mean, float* rstd) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * d;
  float* yr = y + r * d;
  double s = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) s += xr[i];
  const double mu = block_sum(s, shared) / double(d);
  double ss = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) ss += (double(xr[i]) - mu) * (double(xr[i]) - mu);
  const double rs = 1.0 / sqrt(block_sum(ss, shared) / double(d) + eps);
  const float m = static_cast<float>(mu), rsd = static_cast<float>(rs);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = (xr[i] - m) * rsd * gamma[i] + beta[i];
  if (threadIdx.x == 0) {
    mean[r] = m;
    rstd[r] = rsd;
  }
}

__global__ void layer_norm_backward_kernel(int64_t d, const float* dy, const float* x, const float* gamma,
                                           const float* mean, const float* rstd, float* dx) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float* dyr = dy + r * d;
  const float* xr = x + r * d;
  float* dxr = dx + r * d;
  const float m = mean[r], rs = rstd[r];
  double sum_g = 0, sum_gx = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const double g = double(dyr[i]) * gamma[i];
    sum_g += g;
    sum_gx += g * (double(xr[i] - m) * rs);
  }
  const float mean_g = static_cast<float>(block_sum(sum_g, shared) / double(d));
  const float mean_gx = static_cast<float>(block_sum(sum_gx, shared) / double(d));
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const float xhat = (xr[i] - m) * rs;
    dxr[i] += rs * (dyr[i] * gamma[i] - mean_g - xhat * mean_gx);
  }
}

}  // namespace

void layer_norm(int64_t rows, int64_t d, const float* x, const float* gamma, const float* beta, double eps, float* y,
                float* mean, float* rstd) {
  if (rows <= 0) return;
  layer_norm_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(d, x, gamma, beta, eps, y, mean, rstd);
  launched("layer_norm");
}

void layer_norm_backward(int64_t rows, int64_t d, const float* dy, const float* x, const float* gamma,
                         const float* mean, const float* rstd, float* dx, float* dgamma, float* dbeta) {
  if (rows <= 0) return;
  layer_norm_backward_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(d, dy, x, gamma, mean, rstd, dx);
  launched("layer_norm_backward");
  add_column_sums("layer_norm_backward", rows, d, [=] __device__(int64_t r, int64_t c) {
    return double(dy[r * d + c] * ((x[r * d + c] - mean[r]) * rstd[r]));
  }, dgamma);
  add_column_sums("layer_norm_backward", rows, d, [=] __device__(int64_t r, int64_t c) { return double(dy[r * d + c]); },
                  dbeta);
}

}  // namespace tfm::cuda
