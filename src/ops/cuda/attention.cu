// Attention (ops/attention.h) where the fused kernels (fused_attention.cu) do not fit: Q·Kᵀ, the mask
// and softmax, dropout and P̃·V as separate passes, the products batched over the batch entries of one
// head (H calls per product), or over one entry's heads when the beams of a sentence share its keys
// (kv_group > 1). A decoding cache's shared slabs (key_rows) go through one kernel per (entry, head):
// one query, a gather of its keys.
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

// probs[b, h, t, :] (scores on entry) ← softmax over the visible keys, zeros after them.
__global__ void masked_softmax_kernel(int64_t heads, int64_t queries, int64_t keys, bool causal,
                                      const int32_t* key_lengths, float* probs) {
  __shared__ float fshared[32];
  __shared__ double shared[32];
  const int64_t row = blockIdx.x, t = row % queries, b = row / (queries * heads);
  float* p = probs + row * keys;
  const int64_t n = visible_keys(keys, queries, b, t, causal, key_lengths);
  block_softmax(p, n, keys, fshared, shared);
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

// One query per (entry, head) against keys gathered from a decoding cache's slabs: k, v [S, R, H·d].
// The block's row of probs holds its scores, then its weights.
__global__ void decode_attention_kernel(AttentionDims d, const float* q, const float* k, const float* v, bool causal,
                                        const int32_t* key_lengths, const int32_t* key_rows, float scale, float* probs,
                                        float* out) {
  __shared__ float fshared[32];
  __shared__ double shared[32];
  const int64_t b = blockIdx.x / d.heads, h = blockIdx.x % d.heads;
  const int64_t ldq = d.heads * d.d_k, ldv = d.heads * d.d_v, S = d.keys;
  const float* qh = q + b * ldq + h * d.d_k;
  const int32_t* rows = key_rows + b * S;
  float* p = probs + blockIdx.x * S;
  const int64_t n = visible_keys(S, 1, b, 0, causal, key_lengths);
  // Scores: one warp per key.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int64_t s = warp; s < n; s += warps) {
    const float* kh = k + (s * d.kv_rows + rows[s]) * ldq + h * d.d_k;
    float dot = 0;
    for (int64_t c = lane; c < d.d_k; c += 32) dot += qh[c] * kh[c];
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    if (lane == 0) p[s] = dot * scale;
  }
  __syncthreads();
  block_softmax(p, n, S, fshared, shared);
  __syncthreads();
  for (int64_t c = threadIdx.x; c < d.d_v; c += blockDim.x) {
    float acc = 0;
    for (int64_t s = 0; s < n; ++s) acc += p[s] * v[(s * d.kv_rows + rows[s]) * ldv + h * d.d_v + c];
    out[b * ldv + h * d.d_v + c] = acc;
  }
}

}  // namespace

void attention(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
               const int32_t* key_lengths, const int32_t* key_rows, double dropout_rate, const RngStream& rng,
               float* probs, float* out) {
  const int64_t B = d.batch, T = d.queries, S = d.keys, H = d.heads;
  if (B * H * T == 0) return;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  const int64_t ldq = H * d.d_k, ldv = H * d.d_v;
  if (key_rows != nullptr) {
    decode_attention_kernel<<<static_cast<unsigned>(B * H), 128>>>(d, q, k, v, causal, key_lengths, key_rows, scale,
                                                                  probs, out);
    launched("attention (decoding cache)");
    return;
  }
  if (S == 0) {
    check(cudaMemsetAsync(out, 0, sizeof(float) * B * T * ldv), "attention: zero output");
    return;
  }
  if (fused_attention(d, q, k, v, causal, key_lengths, scale, dropout_rate, rng, probs, out)) return;
  // Scores: P[b, h] = scale · Q[b, h] · K[b / g, h]ᵀ.
  const int64_t g = d.kv_group;
  if (g == 1) {
    for (int64_t h = 0; h < H; ++h)
      gemm_strided(false, true, T, S, d.d_k, scale, q + h * d.d_k, ldq, T * ldq, k + h * d.d_k, ldq, S * ldq, 0.0f,
                   probs + h * T * S, S, H * T * S, B, false);
  } else {
    for (int64_t b = 0; b < B; ++b)
      gemm_strided(false, true, T, S, d.d_k, scale, q + b * T * ldq, ldq, d.d_k, k + (b / g) * S * ldq, ldq, d.d_k,
                   0.0f, probs + b * H * T * S, S, T * S, H, false);
  }
  masked_softmax_kernel<<<static_cast<unsigned>(B * H * T), 128>>>(H, T, S, causal, key_lengths, probs);
  launched("attention (softmax)");
  const float* weights = probs;
  std::shared_ptr<void> dropped;
  if (dropout_rate > 0) {
    dropped = scratch(sizeof(float) * B * H * T * S);
    cuda::dropout(B * H * T * S, probs, dropout_rate, rng, static_cast<float*>(dropped.get()));
    weights = static_cast<const float*>(dropped.get());
  }
  // O[b, h] = P̃[b, h] · V[b / g, h].
  if (g == 1) {
    for (int64_t h = 0; h < H; ++h)
      gemm_strided(false, false, T, d.d_v, S, 1.0f, weights + h * T * S, S, H * T * S, v + h * d.d_v, ldv, S * ldv,
                   0.0f, out + h * d.d_v, ldv, T * ldv, B, false);
  } else {
    for (int64_t b = 0; b < B; ++b)
      gemm_strided(false, false, T, d.d_v, S, 1.0f, weights + b * H * T * S, S, T * S, v + (b / g) * S * ldv, ldv,
                   d.d_v, 0.0f, out + b * T * ldv, ldv, d.d_v, H, false);
  }
}

void attention_backward(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                        const int32_t* key_lengths, double dropout_rate, const RngStream& rng, const float* probs,
                        const float* dout, float* dq, float* dk, float* dv) {
  (void)causal;
  (void)key_lengths;  // masked weights are exactly zero in probs: their gradients vanish by themselves
  const int64_t B = d.batch, T = d.queries, S = d.keys, H = d.heads;
  if (B * H * T * S == 0) return;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  const int64_t ldq = H * d.d_k, ldv = H * d.d_v, tile = T * S, n = B * H * tile;
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
  for (int64_t h = 0; h < H; ++h) {
    // dV += P̃ᵀ · dO ;  dP̃ = dO · Vᵀ
    gemm_strided(true, false, S, d.d_v, T, 1.0f, weights + h * tile, S, H * tile, dout + h * d.d_v, ldv, T * ldv, 1.0f,
                 dv + h * d.d_v, ldv, S * ldv, B, false);
    gemm_strided(false, true, T, S, d.d_v, 1.0f, dout + h * d.d_v, ldv, T * ldv, v + h * d.d_v, ldv, S * ldv, 0.0f,
                 dp + h * tile, S, H * tile, B, false);
  }
  if (dropout_rate > 0) cuda::dropout(n, dp, dropout_rate, rng, dp);
  softmax_rows_backward_kernel<<<static_cast<unsigned>(B * H * T), 128>>>(S, probs, dp);
  launched("attention_backward (softmax)");
  for (int64_t h = 0; h < H; ++h) {
    // dQ += dZ · K / √d_k ;  dK += dZᵀ · Q / √d_k
    gemm_strided(false, false, T, d.d_k, S, scale, dp + h * tile, S, H * tile, k + h * d.d_k, ldq, S * ldq, 1.0f,
                 dq + h * d.d_k, ldq, T * ldq, B, false);
    gemm_strided(true, false, S, d.d_k, T, scale, dp + h * tile, S, H * tile, q + h * d.d_k, ldq, T * ldq, 1.0f,
                 dk + h * d.d_k, ldq, S * ldq, B, false);
  }
}

}  // namespace tfm::cuda
