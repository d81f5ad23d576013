#pragma once
// What the CUDA kernel files share: error checks, launch sizes, block reductions and scratch memory
// (check and scratch defined in common.cu, so that no kernel file needs the tensors' headers).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "ops/cuda/kernels.h"

namespace tfm::cuda {

// Throws an Error naming `what` and the CUDA error unless rc is cudaSuccess.
void check(cudaError_t rc, const char* what);
// After a kernel launch: a bad configuration is reported here, naming the kernel.
inline void launched(const char* what) { check(cudaGetLastError(), what); }

constexpr int kThreads = 256;
// Blocks for a grid-stride loop over n items (at most 8 per SM-ish: the loop covers the rest).
inline unsigned grid_for(int64_t n, int threads = kThreads) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((n + threads - 1) / threads, 1 << 16)));
}

// Threads of the kernels that give each row of their input one block.
constexpr int kRowThreads = 256;

// Device memory for a kernel's own intermediate results, from the tensors' caching allocator. Freed
// blocks are handed out again at once: safe because all work runs on one stream, in order.

std::shared_ptr<void> scratch(size_t bytes);

// Sum over a block's threads (blockDim.x a multiple of 32, at most 1024), in a fixed order; every
// thread gets the result. `shared` holds 32 values.
template <class T>
__device__ inline T block_sum(T v, T* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < warps; ++w) total += shared[w];
  return total;
}

template <class T>
__device__ inline T block_max(T v, T* shared) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = shared[0];
  for (int w = 1; w < warps; ++w) total = max(total, shared[w]);
  return total;
}

}  // namespace tfm::cuda
