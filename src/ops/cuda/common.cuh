#pragma once
// What the CUDA kernel files share: error checks, launch sizes, block reductions, scratch memory,
// and the products (products.cu) that the other kernels call.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "core/device.h"
#include "core/error.h"
#include "ops/cuda/kernels.h"

namespace tfm::cuda {

inline void check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  // Kernels run after their launch returns: a fault inside one is reported by a later call.
  const bool earlier = rc == cudaErrorIllegalAddress || rc == cudaErrorLaunchFailure ||
                       rc == cudaErrorMisalignedAddress || rc == cudaErrorIllegalInstruction;
  throw Error(cat("CUDA: ", what, " failed: ", cudaGetErrorString(rc), " (", static_cast<int>(rc), ")",
                  earlier ? "; the fault may come from an earlier kernel (run with compute-sanitizer to find it)"
                          : ""));
}
// After a kernel launch: a bad configuration is reported here, naming the kernel.
inline void launched(const char* what) { check(cudaGetLastError(), what); }

constexpr int kThreads = 256;
// Blocks for a grid-stride loop over n items (at most 8 per SM-ish: the loop covers the rest).
inline unsigned grid_for(int64_t n, int threads = kThreads) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((n + threads - 1) / threads, 1 << 16)));
}

// Device memory for a kernel's own intermediate results, from the tensors' caching allocator. Freed
// blocks are handed out again at once: safe because all work runs on one stream, in order.
inline std::shared_ptr<void> scratch(size_t bytes) {
  return require_device_memory(Device::CUDA, "CUDA scratch memory").allocate(bytes);
}

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

// Row-major strided-batched product with explicit leading dimensions (products.cu):
//   C_i = alpha · op(A_i) · op(B_i) + beta · C_i,  X_i = X + i · stride_x,  i < batch;
// bf16: A and B rounded to bfloat16 first (they must then be contiguous blocks: lda/ldb their row
// lengths), sums in float32.
void gemm_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta, float* c,
                  int64_t ldc, int64_t stride_c, int64_t batch, bool bf16);

void round_to_bf16(int64_t n, const float* x, float* y);

// A linear layer's products through cuBLASLt, the rest in the product's epilogue (products.cu):
//   linear_forward:     y[rows, out] = act(x[rows, in] · w[out, in]ᵀ + bias[out]), act none or ReLU;
//                       with a residual[rows, out] (not y; relu false): y = x · wᵀ + residual + bias
//   linear_weight_grad: dw[out, in] += dy[rows, out]ᵀ · x[rows, in], bgrad[out] = Σ_rows dy (written);
//                       float32 only (in bf16 the epilogue would sum dy rounded to bfloat16)
// linear_forward's bf16: x and w rounded to bfloat16 first. False, with nothing done but rounding,
// where cuBLASLt has no algorithm for it.
bool linear_forward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w, const float* bias,
                    bool relu, float* y, bool bf16, const float* residual = nullptr);
bool linear_weight_grad(int64_t rows, int64_t in, int64_t out, const float* x, const float* dy, float* dw,
                        float* bgrad);
// Inference's packed weights (ops/packed.h on a GPU, products.cu): pack_bf16 rounds w[n] into
// bfloat16 memory of its own (256-byte aligned); linear_forward_packed: y[rows, out] = act(bf16(x) ·
// w16[out, in]ᵀ + bias) with the bias (may be null) and act (none or ReLU) in cuBLASLt's epilogue,
// false where cuBLASLt has no algorithm for it, the residual (may be null) as linear_forward's;
// gemm_packed_bf16: y = bf16(x) · w16ᵀ through cuBLAS.
std::shared_ptr<const void> pack_bf16(int64_t n, const float* w);
bool linear_forward_packed(int64_t rows, int64_t in, int64_t out, const float* x, const void* w16, const float* bias,
                           bool relu, float* y, const float* residual = nullptr);
void gemm_packed_bf16(int64_t rows, int64_t in, int64_t out, const float* x, const void* w16, float* y);
// How many cuBLASLt products have run with a residual as C (c_in) since the program started.
int64_t residual_products();
// dx[rows, in] += dy[rows, out] · w[out, in] (dx may be null) and dw[out, in] += dy[rows, out]ᵀ · x[rows, in]
// with dy already rounded to bfloat16 (dy16), w and x rounded once for both products, float32 sums
// (products.cu).
void linear_backward_bf16(int64_t rows, int64_t in, int64_t out, const float* x, const float* w,
                          const __nv_bfloat16* dy16, float* dx, float* dw);

// Attention (products.cu), as Kernels::attention and attention_backward.
void attention(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
               const int32_t* key_lengths, const int32_t* key_rows, double dropout, const RngStream& rng, float* probs,
               float* out);
void attention_backward(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                        const int32_t* key_lengths, double dropout, const RngStream& rng, const float* probs,
                        const float* dout, float* dq, float* dk, float* dv);

// Kernels::dropout (kernels.cu): element i of the flat array kept when uniform(i) ≥ float(p).
void dropout(int64_t n, const float* x, double p, const RngStream& rng, float* y);

}  // namespace tfm::cuda
