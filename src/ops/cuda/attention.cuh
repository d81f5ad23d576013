#pragma once
// What attention.cu and fused_attention.cu share: the keys each query sees, and the fused kernels'
// launches, which attention.cu tries first. Query head h reads key/value head h / (H / KV).
#include <cstdint>

#include "core/rng.h"
#include "ops/cuda/common.cuh"

namespace tfm::cuda {

// Keys query t of entry b sees: the first n, n = min(length_b, t + 1 + S − T) (causal), ≥ 0.
__device__ inline int64_t visible_keys(int64_t keys, int64_t queries, int64_t b, int64_t t, bool causal,
                                       const int32_t* key_lengths) {
  int64_t n = key_lengths ? min(static_cast<int64_t>(key_lengths[b]), keys) : keys;
  if (causal) n = min(n, t + 1 + keys - queries);
  return n > 0 ? n : 0;
}
// The first of those n keys query t sees: 0 without a sliding window; with one, keys before
// position t + S − T − window + 1 are masked too (n when none of the n is left).
__device__ inline int64_t first_key(int64_t keys, int64_t queries, int64_t t, int64_t window, int64_t n) {
  if (window <= 0) return 0;
  const int64_t lo = t + keys - queries - window + 1;
  return lo < 0 ? 0 : (lo > n ? n : lo);
}

// attention and attention_backward (ops.h) in one kernel per (entry, head), scale = 1 / √d_k: false,
// with nothing done, where the head does not fit in shared memory (the caller then runs the products).
bool fused_attention(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                     const int32_t* key_lengths, float scale, double dropout_rate, const RngStream& rng, float* probs,
                     float* out);
bool fused_attention_backward(const AttentionDims& d, const float* q, const float* k, const float* v, float scale,
                              double dropout_rate, const RngStream& rng, const float* probs, const float* dout,
                              float* dq, float* dk, float* dv);

}  // namespace tfm::cuda
