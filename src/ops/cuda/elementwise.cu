// Elementwise ops (ops/elementwise.h): sums, scaling, bias, activations and their gradients, dropout
// (one Philox block per four consecutive elements, as the CPU's) and the sum of squares.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <array>
#include <cmath>
#include <vector>

#include "ops/cuda/activation.cuh"
#include "ops/cuda/column_sums.cuh"
#include "ops/cuda/common.cuh"
#include "ops/cuda/for_each.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {

using ops::Activation;

namespace {

// ---- dropout: one Philox block per four consecutive elements, as the CPU's ----
__global__ void dropout_kernel(int64_t n, const float* x, float threshold, float keep_scale, RngStream rng, float* y) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < blocks; j += int64_t{gridDim.x} * blockDim.x) {
    const std::array<float, 4> u = rng.uniform4(static_cast<uint64_t>(j));
    for (int l = 0; l < 4; ++l) {
      const int64_t i = 4 * j + l;
      if (i < n) y[i] = u[l] >= threshold ? __fmul_rn(x[i], keep_scale) : 0.0f;
    }
  }
}

__global__ void partial_sum_squares(int64_t n, const float* x, double* partial) {
  __shared__ double shared[32];
  double s = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    s += double(x[i]) * x[i];
  s = block_sum(s, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

}  // namespace

void add(int64_t n, const float* a, const float* b, float* y) {
  for_each("add", n, [=] __device__(int64_t i) { y[i] = a[i] + b[i]; });
}

void add_to(int64_t n, const float* x, float* y) {
  for_each("add_to", n, [=] __device__(int64_t i) { y[i] += x[i]; });
}

void scale(int64_t n, const float* x, float alpha, float* y) {
  for_each("scale", n, [=] __device__(int64_t i) { y[i] = alpha * x[i]; });
}

void bias_add(int64_t rows, int64_t cols, const float* x, const float* bias, float* y) {
  for_each("bias_add", rows * cols, [=] __device__(int64_t i) { y[i] = x[i] + bias[i % cols]; });
}

void bias_activate(int64_t rows, int64_t cols, const float* x, const float* bias, Activation act,
                   float* y) {
  for_each("bias_activate", rows * cols,
           [=] __device__(int64_t i) { y[i] = activate_one(act, x[i] + bias[i % cols]); });
}

void bias_add_backward(int64_t rows, int64_t cols, const float* dy, float* dbias) {
  add_column_sums("bias_add_backward", rows, cols, [=] __device__(int64_t r, int64_t c) { return double(dy[r * cols + c]); },
                  dbias);
}

void relu(int64_t n, const float* x, float* y) {
  for_each("relu", n, [=] __device__(int64_t i) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; });
}

void relu_backward(int64_t n, const float* y, const float* dy, float* dx) {
  for_each("relu_backward", n, [=] __device__(int64_t i) {
    if (y[i] > 0.0f) dx[i] += dy[i];
  });
}

void relu_backward_bf16(int64_t n, const void* y16, const float* dy, float* dx) {
  const auto* y = static_cast<const __nv_bfloat16*>(y16);
  for_each("relu_backward_bf16", n, [=] __device__(int64_t i) {
    if (__bfloat162float(y[i]) > 0.0f) dx[i] += dy[i];
  });
}

void activate(int64_t n, Activation act, const float* x, float* y) {
  for_each("activate", n, [=] __device__(int64_t i) { y[i] = activate_one(act, x[i]); });
}

void activation_backward(int64_t n, Activation act, const float* pre, const float* dy, float* dx) {
  for_each("activation_backward", n, [=] __device__(int64_t i) { dx[i] += dy[i] * derivative(act, pre[i]); });
}

void dropout(int64_t n, const float* x, double p, const RngStream& rng, float* y) {
  if (n <= 0) return;
  dropout_kernel<<<grid_for((n + 3) / 4), kThreads>>>(n, x, static_cast<float>(p), static_cast<float>(1.0 / (1.0 - p)),
                                                      rng, y);
  launched("dropout");
}

double sum_squares(int64_t n, const float* x) {
  constexpr int kBlocks = 1024;
  auto partial = scratch(sizeof(double) * kBlocks);
  auto* p = static_cast<double*>(partial.get());
  partial_sum_squares<<<kBlocks, kThreads>>>(n, x, p);
  launched("sum_squares");
  std::vector<double> host(kBlocks);
  check(cudaMemcpy(host.data(), p, sizeof(double) * kBlocks, cudaMemcpyDeviceToHost), "sum_squares: copy");
  double s = 0;
  for (double v : host) s += v;
  return s;
}

}  // namespace tfm::cuda
