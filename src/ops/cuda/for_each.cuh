#pragma once
// The launch of the elementwise kernels: a function of the index over n items, in a grid-stride loop.
#include <cstdint>

#include "ops/cuda/common.cuh"

namespace tfm::cuda {

// y[i] = f(i) for i < n, in a grid-stride loop.
template <class F>
__global__ void for_each_kernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) f(i);
}
template <class F>
void for_each(const char* what, int64_t n, F f) {
  if (n <= 0) return;
  for_each_kernel<<<grid_for(n), kThreads>>>(n, f);
  launched(what);
}

}  // namespace tfm::cuda
