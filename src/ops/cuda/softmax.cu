// Softmax over rows (ops/softmax.h): one block per row.
#include <cuda_runtime.h>

#include <cmath>

#include "ops/cuda/common.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {
namespace {

__global__ void softmax_kernel(int64_t cols, const float* x, float* y) {
  __shared__ float fshared[32];
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * cols;
  float* yr = y + r * cols;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) mx = fmaxf(mx, xr[i]);
  mx = block_max(mx, fshared);
  double s = 0;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) s += expf(xr[i] - mx);
  const float inv = static_cast<float>(1.0 / block_sum(s, shared));
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = expf(xr[i] - mx) * inv;
}

__global__ void softmax_backward_kernel(int64_t cols, const float* y, const float* dy, float* dx) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float *yr = y + r * cols, *dyr = dy + r * cols;
  float* dxr = dx + r * cols;
  double dot = 0;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) dot += double(dyr[i]) * yr[i];
  const float d = static_cast<float>(block_sum(dot, shared));
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) dxr[i] += yr[i] * (dyr[i] - d);
}

}  // namespace

void softmax(int64_t rows, int64_t cols, const float* x, float* y) {
  if (rows <= 0) return;
  softmax_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(cols, x, y);
  launched("softmax");
}

void softmax_backward(int64_t rows, int64_t cols, const float* y, const float* dy, float* dx) {
  if (rows <= 0) return;
  softmax_backward_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(cols, y, dy, dx);
  launched("softmax_backward");
}

}  // namespace tfm::cuda
