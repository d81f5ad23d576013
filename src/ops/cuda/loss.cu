// Label-smoothed cross-entropy (ops/loss.h): one block per row; the rows' losses summed on the host,
// in row order.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include <cmath>
#include <vector>

#include "ops/cuda/common.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {
namespace {

__global__ void cross_entropy_kernel(int64_t vocab, const float* logits, const int32_t* targets, double smoothing,
                                     int32_t ignore_index, float* lse, double* row_loss) {
  __shared__ float fshared[32];
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float* z = logits + r * vocab;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) mx = fmaxf(mx, z[i]);
  mx = block_max(mx, fshared);
  double se = 0, sz = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    se += expf(z[i] - mx);
    sz += z[i];
  }
  se = block_sum(se, shared);
  sz = block_sum(sz, shared);
  if (threadIdx.x == 0) {
    const double l = double(mx) + log(se);
    lse[r] = static_cast<float>(l);
    const int32_t t = targets[r];
    row_loss[r] = t == ignore_index ? 0.0 : l - (1.0 - smoothing) * double(z[t]) - smoothing / double(vocab) * sz;
  }
}

// Out: float or __nv_bfloat16 (written rounded; accumulate false).
template <class Out>
__global__ void cross_entropy_backward_kernel(int64_t vocab, const float* logits, const int32_t* targets,
                                              const float* lse, int32_t ignore_index, float g, float on, float off,
                                              Out* dlogits, bool accumulate) {
  const int64_t r = blockIdx.x;
  const float* z = logits + r * vocab;
  Out* dz = dlogits + r * vocab;
  const int32_t t = targets[r];
  if (t == ignore_index) {
    if (!accumulate)
      for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) dz[i] = Out(0.0f);
    return;
  }
  const float l = lse[r];
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    float v = g * expf(z[i] - l) - off;
    if (i == t) v -= on;
    if constexpr (std::is_same_v<Out, float>) dz[i] = accumulate ? dz[i] + v : v;
    else dz[i] = __float2bfloat16_rn(v);
  }
}

}  // namespace

double cross_entropy(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets, double smoothing,
                     int32_t ignore_index, float* lse) {
  if (rows <= 0) return 0.0;
  auto losses = scratch(sizeof(double) * rows);
  auto* l = static_cast<double*>(losses.get());
  cross_entropy_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(vocab, logits, targets, smoothing, ignore_index,
                                                                    lse, l);
  launched("cross_entropy");
  std::vector<double> host(static_cast<size_t>(rows));
  check(cudaMemcpy(host.data(), l, sizeof(double) * rows, cudaMemcpyDeviceToHost), "cross_entropy: copy");
  double total = 0;  // in row order, as the CPU's
  for (double x : host) total += x;
  return total;
}

void cross_entropy_backward(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                            const float* lse, double smoothing, int32_t ignore_index, double dloss, float* dlogits,
                            bool accumulate) {
  if (rows <= 0) return;
  const auto off = static_cast<float>(dloss * smoothing / double(vocab));
  const auto on = static_cast<float>(dloss * (1.0 - smoothing));
  cross_entropy_backward_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(
      vocab, logits, targets, lse, ignore_index, static_cast<float>(dloss), on, off, dlogits, accumulate);
  launched("cross_entropy_backward");
}

void cross_entropy_backward_bf16(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                                 const float* lse, double smoothing, int32_t ignore_index, double dloss,
                                 void* dlogits16) {
  if (rows <= 0) return;
  const auto off = static_cast<float>(dloss * smoothing / double(vocab));
  const auto on = static_cast<float>(dloss * (1.0 - smoothing));
  cross_entropy_backward_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(
      vocab, logits, targets, lse, ignore_index, static_cast<float>(dloss), on, off,
      static_cast<__nv_bfloat16*>(dlogits16), false);
  launched("cross_entropy_backward_bf16");
}

}  // namespace tfm::cuda
