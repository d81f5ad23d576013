// Attention (ops/attention.h) where the fused kernels (fused_attention.cu) do not fit: Q·Kᵀ, the mask
// and softmax, dropout and P̃·V as separate passes, the products batched over the batch entries of one
// head (H calls per product), or over one entry's heads when the beams of a sentence share its keys
// (kv_group > 1; with grouped-query heads, over the key/value heads, once per head of a group). A
// decoding cache's shared slabs (key_rows) go through one kernel per (entry, head): one query, a
// gather of its keys.
#include <cuda_runtime.h>

#include <cmath>
#include <memory>

#include "ops/cuda/attention.cuh"
#include "ops/cuda/common.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {
namespace {

// A row of `keys` scores p, by the whole block: softmax over the first n, zeros after them (all
// zeros when n is 0). `fshared` and `shared` hold 32 values each.
__device__ inline void block_softmax(float* p, int64_t n, int64_t keys, float* fshared, double* shared) {
  float mx = -INFINITY;
  for (int64_t s = threadIdx.x; s < n; s += blockDim.x) mx = fmaxf(mx, p[s]);
  mx = block_max(mx, fshared);
  double sum = 0;
  for (int64_t s = threadIdx.x; s < n; s += blockDim.x) sum += expf(p[s] - mx);
  sum = block_sum(sum, shared);
  const float inv = n > 0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (int64_t s = threadIdx.x; s < keys; s += blockDim.x) p[s] = s < n ? expf(p[s] - mx) * inv : 0.0f;
}

// probs[b, h, t, :] (scores on entry) ← softmax over the visible keys, zeros before (a sliding
// window) and after them.
__global__ void masked_softmax_kernel(int64_t heads, int64_t queries, int64_t keys, bool causal, int64_t window,
                                      const int32_t* key_lengths, float* probs) {
  __shared__ float fshared[32];
  __shared__ double shared[32];
  const int64_t row = blockIdx.x, t = row % queries, b = row / (queries * heads);
  float* p = probs + row * keys;
  const int64_t n = visible_keys(keys, queries, b, t, causal, key_lengths), lo = first_key(keys, queries, t, window, n);
  for (int64_t s = threadIdx.x; s < lo; s += blockDim.x) p[s] = 0.0f;
  block_softmax(p + lo, n - lo, keys - lo, fshared, shared);
}

// dz[row, :] ← p ⊙ (dz − Σ dz ⊙ p), in place.
__global__ void softmax_rows_backward_kernel(int64_t keys, const float* probs, float* dz) {
  __shared__ double shared[32];
  const int64_t row = blockIdx.x;
  const float* p = probs + row * keys;
  float* g = dz + row * keys;
  double dot = 0;
  for (int64_t s = threadIdx.x; s < keys; s += blockDim.x) dot += double(g[s]) * p[s];
  const float d = static_cast<float>(block_sum(dot, shared));
  for (int64_t s = threadIdx.x; s < keys; s += blockDim.x) g[s] = p[s] * (g[s] - d);
}

// One query per (entry, head) against keys gathered from a decoding cache's slabs: k, v [S, R, KV·d].
// The block's row of probs holds its scores, then its weights.
__global__ void decode_attention_kernel(AttentionDims d, const float* q, const float* k, const float* v, bool causal,
                                        const int32_t* key_lengths, const int32_t* key_rows, float scale, float* probs,
                                        float* out) {
  __shared__ float fshared[32];
  __shared__ double shared[32];
  const int64_t b = blockIdx.x / d.heads, h = blockIdx.x % d.heads, kvh = h / (d.heads / d.kv_heads);
  const int64_t ldq = d.heads * d.d_k, ldo = d.heads * d.d_v, ldk = d.kv_heads * d.d_k, ldv = d.kv_heads * d.d_v;
  const int64_t S = d.keys;
  const float* qh = q + b * ldq + h * d.d_k;
  const int32_t* rows = key_rows + b * S;
  float* p = probs + blockIdx.x * S;
  const int64_t n = visible_keys(S, 1, b, 0, causal, key_lengths), lo = first_key(S, 1, 0, d.window, n);
  for (int64_t s = threadIdx.x; s < lo; s += blockDim.x) p[s] = 0.0f;  // before the window
  // Scores: one warp per key.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int64_t s = lo + warp; s < n; s += warps) {
    const float* kh = k + (s * d.kv_rows + rows[s]) * ldk + kvh * d.d_k;
    float dot = 0;
    for (int64_t c = lane; c < d.d_k; c += 32) dot += qh[c] * kh[c];
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    if (lane == 0) p[s] = dot * scale;
  }
  __syncthreads();
  block_softmax(p + lo, n - lo, S - lo, fshared, shared);
  __syncthreads();
  for (int64_t c = threadIdx.x; c < d.d_v; c += blockDim.x) {
    float acc = 0;
    for (int64_t s = lo; s < n; ++s) acc += p[s] * v[(s * d.kv_rows + rows[s]) * ldv + kvh * d.d_v + c];
    out[b * ldo + h * d.d_v + c] = acc;
  }
}

// Scores: P[b, h] = scale · Q[b, h] · K[b / g, h / r]ᵀ (g = kv_group, r = H / KV): one batched
// product per query head over the entries, or with g > 1, per entry and head of each key/value
// head's group, over the key/value heads.
void attention_scores(const AttentionDims& d, const float* q, const float* k, float scale, float* probs) {
  const int64_t B = d.batch, T = d.queries, S = d.keys, H = d.heads, KV = d.kv_heads, r = H / KV, g = d.kv_group;
  const int64_t ldq = H * d.d_k, ldk = KV * d.d_k;
  if (g == 1) {
    for (int64_t h = 0; h < H; ++h)
      gemm_strided(false, true, T, S, d.d_k, scale, q + h * d.d_k, ldq, T * ldq, k + h / r * d.d_k, ldk, S * ldk, 0.0f,
                   probs + h * T * S, S, H * T * S, B, false);
  } else {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < r; ++j)
        gemm_strided(false, true, T, S, d.d_k, scale, q + b * T * ldq + j * d.d_k, ldq, r * d.d_k,
                     k + (b / g) * S * ldk, ldk, d.d_k, 0.0f, probs + (b * H + j) * T * S, S, r * T * S, KV, false);
  }
}

// O[b, h] = P̃[b, h] · V[b / g, h / r], batched as attention_scores.
void attention_values(const AttentionDims& d, const float* weights, const float* v, float* out) {
  const int64_t B = d.batch, T = d.queries, S = d.keys, H = d.heads, KV = d.kv_heads, r = H / KV, g = d.kv_group;
  const int64_t ldo = H * d.d_v, ldv = KV * d.d_v;
  if (g == 1) {
    for (int64_t h = 0; h < H; ++h)
      gemm_strided(false, false, T, d.d_v, S, 1.0f, weights + h * T * S, S, H * T * S, v + h / r * d.d_v, ldv, S * ldv,
                   0.0f, out + h * d.d_v, ldo, T * ldo, B, false);
  } else {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < r; ++j)
        gemm_strided(false, false, T, d.d_v, S, 1.0f, weights + (b * H + j) * T * S, S, r * T * S,
                     v + (b / g) * S * ldv, ldv, d.d_v, 0.0f, out + b * T * ldo + j * d.d_v, ldo, r * d.d_v, KV, false);
  }
}

}  // namespace

void attention(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
               const int32_t* key_lengths, const int32_t* key_rows, double dropout_rate, const RngStream& rng,
               float* probs, float* out) {
  const int64_t B = d.batch, T = d.queries, S = d.keys, H = d.heads;
  if (B * H * T == 0) return;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  if (key_rows != nullptr) {
    decode_attention_kernel<<<static_cast<unsigned>(B * H), 128>>>(d, q, k, v, causal, key_lengths, key_rows, scale,
                                                                  probs, out);
    launched("attention (decoding cache)");
    return;
  }
  if (S == 0) {
    check(cudaMemsetAsync(out, 0, sizeof(float) * B * T * H * d.d_v), "attention: zero output");
    return;
  }
  if (fused_attention(d, q, k, v, causal, key_lengths, scale, dropout_rate, rng, probs, out)) return;
  attention_scores(d, q, k, scale, probs);
  masked_softmax_kernel<<<static_cast<unsigned>(B * H * T), 128>>>(H, T, S, causal, d.window, key_lengths, probs);
  launched("attention (softmax)");
  const float* weights = probs;
  std::shared_ptr<void> dropped;
  if (dropout_rate > 0) {
    dropped = scratch(sizeof(float) * B * H * T * S);
    cuda::dropout(B * H * T * S, probs, dropout_rate, rng, static_cast<float*>(dropped.get()));
    weights = static_cast<const float*>(dropped.get());
  }
  attention_values(d, weights, v, out);
}

void attention_backward(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                        const int32_t* key_lengths, double dropout_rate, const RngStream& rng, const float* probs,
                        const float* dout, float* dq, float* dk, float* dv) {
  (void)causal;
  (void)key_lengths;  // masked weights (padding, causal, window) are exactly zero in probs: so are their gradients
  const int64_t B = d.batch, T = d.queries, S = d.keys, H = d.heads;
  if (B * H * T * S == 0) return;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  const int64_t ldq = H * d.d_k, ldo = H * d.d_v, ldk = d.kv_heads * d.d_k, ldv = d.kv_heads * d.d_v;
  const int64_t r = H / d.kv_heads, tile = T * S, n = B * H * tile;
  if (fused_attention_backward(d, q, k, v, scale, dropout_rate, rng, probs, dout, dq, dk, dv)) return;
  const float* weights = probs;
  std::shared_ptr<void> dropped;
  if (dropout_rate > 0) {
    dropped = scratch(sizeof(float) * n);
    cuda::dropout(n, probs, dropout_rate, rng, static_cast<float*>(dropped.get()));
    weights = static_cast<const float*>(dropped.get());
  }
  auto dp_memory = scratch(sizeof(float) * n);
  auto* dp = static_cast<float*>(dp_memory.get());
  // Query heads in order, each adding into its key/value head's dk and dv.
  for (int64_t h = 0; h < H; ++h) {
    // dV += P̃ᵀ · dO ;  dP̃ = dO · Vᵀ
    gemm_strided(true, false, S, d.d_v, T, 1.0f, weights + h * tile, S, H * tile, dout + h * d.d_v, ldo, T * ldo, 1.0f,
                 dv + h / r * d.d_v, ldv, S * ldv, B, false);
    gemm_strided(false, true, T, S, d.d_v, 1.0f, dout + h * d.d_v, ldo, T * ldo, v + h / r * d.d_v, ldv, S * ldv, 0.0f,
                 dp + h * tile, S, H * tile, B, false);
  }
  if (dropout_rate > 0) cuda::dropout(n, dp, dropout_rate, rng, dp);
  softmax_rows_backward_kernel<<<static_cast<unsigned>(B * H * T), 128>>>(S, probs, dp);
  launched("attention_backward (softmax)");
  for (int64_t h = 0; h < H; ++h) {
    // dQ += dZ · K / √d_k ;  dK += dZᵀ · Q / √d_k
    gemm_strided(false, false, T, d.d_k, S, scale, dp + h * tile, S, H * tile, k + h / r * d.d_k, ldk, S * ldk, 1.0f,
                 dq + h * d.d_k, ldq, T * ldq, B, false);
    gemm_strided(true, false, S, d.d_k, T, scale, dp + h * tile, S, H * tile, q + h * d.d_k, ldq, T * ldq, 1.0f,
                 dk + h / r * d.d_k, ldk, S * ldk, B, false);
  }
}

}  // namespace tfm::cuda
