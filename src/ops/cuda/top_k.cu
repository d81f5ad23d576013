// The decoding step's selection (ops/top_k.h): per row of float32 logits the k best allowed columns
// and their log-probabilities, one block per row.
#include <cuda_runtime.h>

#include <cmath>

#include "ops/cuda/common.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {
namespace {

struct BannedIds {
  int32_t n;
  int32_t id[Kernels::kMaxBanned];
};

// (a_value, a_id) ranks before (b_value, b_id): a higher value, or the same value and a lower id;
// an id < 0 is no candidate and ranks last.
__device__ inline bool ranks_before(float a_value, int32_t a_id, float b_value, int32_t b_id) {
  if (a_id < 0) return false;
  if (b_id < 0) return true;
  return a_value > b_value || (a_value == b_value && a_id < b_id);
}

// The block's best of its threads' candidates (best_value, best_id) in ranks_before's order: within
// each warp, then across the warps through shared_value and shared_id (32 values each). Every thread
// gets it.
__device__ __forceinline__ void block_pick(float& best_value, int32_t& best_id, float* shared_value,
                                           int32_t* shared_id) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int o = 16; o > 0; o >>= 1) {  // ids are unique: every lane ends with the same pick
    const float other_value = __shfl_xor_sync(0xffffffffu, best_value, o);
    const int32_t other_id = __shfl_xor_sync(0xffffffffu, best_id, o);
    if (ranks_before(other_value, other_id, best_value, best_id)) {
      best_value = other_value;
      best_id = other_id;
    }
  }
  __syncthreads();  // the previous pick's reads of shared_value are done
  if (lane == 0) {
    shared_value[warp] = best_value;
    shared_id[warp] = best_id;
  }
  __syncthreads();
  best_value = shared_value[0];
  best_id = shared_id[0];
  for (int w = 1; w < warps; ++w)
    if (ranks_before(shared_value[w], shared_id[w], best_value, best_id)) {
      best_value = shared_value[w];
      best_id = shared_id[w];
    }
}

// Each thread keeps the best k of its columns (visited in increasing id, so that of equal values the
// lower id stays first, as the CPU's insertion); the row's best k are then taken from the threads'
// lists one at a time, by a block-wide pick of the best head. The sum Σ exp(z − M) runs in double over
// a second pass (M: the row's largest value), in a fixed order.
template <int KCAP>
__global__ void top_k_kernel(int64_t V, int k, const float* logits, BannedIds banned, double* logp, int32_t* ids,
                             double* lse) {
  __shared__ double shared_sum[32];
  __shared__ float shared_max[32], shared_value[32];
  __shared__ int32_t shared_id[32];
  const float* z = logits + static_cast<int64_t>(blockIdx.x) * V;
  float value[KCAP];
  int32_t id[KCAP];
  int n = 0;
  float m = -INFINITY;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {
    const float x = z[v];
    m = fmaxf(m, x);
    if (isnan(x) || (n == k && x <= value[k - 1])) continue;
    bool is_banned = false;
    for (int b = 0; b < banned.n; ++b) is_banned = is_banned || banned.id[b] == v;
    if (is_banned) continue;
    int pos = n < k ? n : k - 1;
    while (pos > 0 && value[pos - 1] < x) {
      value[pos] = value[pos - 1];
      id[pos] = id[pos - 1];
      --pos;
    }
    value[pos] = x;
    id[pos] = static_cast<int32_t>(v);
    n += n < k;
  }
  const float M = block_max(m, shared_max);
  double s = 0;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {
    const float x = z[v];
    if (x != -INFINITY) s += exp(double(x) - double(M));  // NaN stays: the sum is then NaN, as the CPU's
  }
  s = block_sum(s, shared_sum);
  const double l = double(M) + log(s);
  if (threadIdx.x == 0) lse[blockIdx.x] = l;
  int head = 0;
  for (int j = 0; j < k; ++j) {
    float best_value = head < n ? value[head] : 0.0f;
    int32_t best_id = head < n ? id[head] : -1;
    block_pick(best_value, best_id, shared_value, shared_id);
    const int64_t out = static_cast<int64_t>(blockIdx.x) * k + j;
    if (best_id < 0) {  // fewer than k allowed columns: the rest is empty (the same for every thread)
      for (int64_t e = out + threadIdx.x; e < static_cast<int64_t>(blockIdx.x + 1) * k; e += blockDim.x) {
        logp[e] = -INFINITY;
        ids[e] = -1;
      }
      return;
    }
    if (head < n && id[head] == best_id) ++head;
    if (threadIdx.x == 0) {
      logp[out] = double(best_value) - l;
      ids[out] = best_id;
    }
  }
}

template <int KCAP>
void launch_top_k(int64_t rows, int64_t V, int64_t k, const float* logits, const BannedIds& banned, double* logp,
                  int32_t* ids, double* lse) {
  top_k_kernel<KCAP><<<static_cast<unsigned>(rows), kRowThreads>>>(V, static_cast<int>(k), logits, banned, logp, ids,
                                                                   lse);
  launched("top_k_logprobs");
}

}  // namespace

bool top_k_logprobs(int64_t rows, int64_t V, int64_t k, const float* logits, const int32_t* banned_ids,
                    int64_t n_banned, double* logp, int32_t* ids, double* lse) {
  if (k < 1 || k > Kernels::kMaxTopK || n_banned > Kernels::kMaxBanned) return false;
  if (rows <= 0) return true;
  BannedIds banned{static_cast<int32_t>(n_banned), {}};
  for (int64_t b = 0; b < n_banned; ++b) banned.id[b] = banned_ids[b];
  if (k == 1) launch_top_k<1>(rows, V, k, logits, banned, logp, ids, lse);
  else if (k <= 4) launch_top_k<4>(rows, V, k, logits, banned, logp, ids, lse);
  else if (k <= 8) launch_top_k<8>(rows, V, k, logits, banned, logp, ids, lse);
  else launch_top_k<Kernels::kMaxTopK>(rows, V, k, logits, banned, logp, ids, lse);
  return true;
}

}  // namespace tfm::cuda
