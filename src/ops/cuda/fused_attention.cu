// Fused attention: one block per (entry, head) (the backward: per entry and key/value head, for the
// query heads that share it), its keys and values in shared memory.
//
// For the sizes of sentence-level translation (S, T up to a few hundred): the whole head's K and V
// (and in the backward Q, dO and dZ) fit in shared memory, and one kernel does what the products,
// softmax and dropout passes do in attention.cu. Rows are padded by four floats (kPad) so that lanes reading
// rows s = lane, lane + 32, ... at the same columns hit different banks, and so that rows stay 16-byte
// aligned for the four-float reads (d_k and d_v multiples of 4). Every sum runs in a fixed
// order within one thread or warp: the results do not change from run to run.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "ops/cuda/attention.cuh"
#include "ops/cuda/common.cuh"

namespace tfm::cuda {
namespace {

// Warps per block: the forward's, and the backward's (whose blocks need more shared memory, so
// fewer fit on an SM; 16 warps measured the same as 8 on the H100, 14.5 ms a base step).
constexpr int kPad = 4, kFusedWarps = 8, kBackwardWarps = 16;

// A row of S floats in shared memory, padded to a multiple of 4 (16-byte aligned rows).
__host__ __device__ inline int padded(int s) { return (s + 3) / 4 * 4; }

// Element g of the flat probs array kept by dropout (the CPU's rule), as a 0/1 factor times 1/(1−p).
__device__ inline float keep_factor(const RngStream& rng, uint64_t g, float threshold, float keep_scale) {
  return rng.uniform4(g / 4)[g % 4] >= threshold ? keep_scale : 0.0f;
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// rows × cols floats from `src` (rows `ld` apart) into shared `dst` (rows cols + kPad apart): one
// warp per row, lanes along it.
__device__ inline void load_rows(float* dst, const float* src, int rows, int cols, int64_t ld) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int r = warp; r < rows; r += warps)
    for (int c = lane; c < cols; c += 32) dst[r * (cols + kPad) + c] = src[r * ld + c];
}

// Σ_c a[c] · b[c], c < n, in order of c; kVec: read four at a time (n a multiple of 4, a and b
// 16-byte aligned): a quarter of the shared-memory reads, the same sums.
template <bool kVec>
__device__ inline float dot_rows(const float* a, const float* b, int n) {
  float acc = 0;
  if constexpr (kVec) {
    for (int c = 0; c < n; c += 4) {
      const float4 x = *reinterpret_cast<const float4*>(a + c), y = *reinterpret_cast<const float4*>(b + c);
      acc += x.x * y.x;
      acc += x.y * y.y;
      acc += x.z * y.z;
      acc += x.w * y.w;
    }
  } else {
    for (int c = 0; c < n; ++c) acc += a[c] * b[c];
  }
  return acc;
}

// out(c, Σ_i w[i · w_step] · m[i · ld + c]) for i < n, in order of i, for each column c < cols a lane
// of the warp takes: c = lane, lane + 32, ...; kVec: two neighbouring columns a lane (cols even, m's
// rows 8-byte aligned), so that each weight read serves two sums.
template <bool kVec, class Out>
__device__ inline void weighted_columns(const float* w, int w_step, const float* m, int ld, int n, int cols, Out&& out) {
  const int lane = threadIdx.x % 32;
  if constexpr (kVec) {
    for (int c = 2 * lane; c < cols; c += 64) {
      float a0 = 0, a1 = 0;
      for (int i = 0; i < n; ++i) {
        const float x = w[i * w_step];
        const float2 y = *reinterpret_cast<const float2*>(m + i * ld + c);
        a0 += x * y.x;
        a1 += x * y.y;
      }
      out(c, a0);
      out(c + 1, a1);
    }
  } else {
    for (int c = lane; c < cols; c += 32) {
      float a = 0;
      for (int i = 0; i < n; ++i) a += w[i * w_step] * m[i * ld + c];
      out(c, a);
    }
  }
}

// kVec: d_k and d_v multiples of 4 (the vector reads of dot_rows and weighted_columns).
template <bool kVec>
__global__ void fused_attention_kernel(AttentionDims d, const float* q, const float* k, const float* v, bool causal,
                                       const int32_t* key_lengths, float scale, float threshold, float keep_scale,
                                       bool drop, RngStream rng, float* probs, float* out) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int T = static_cast<int>(d.queries), S = static_cast<int>(d.keys), dk = static_cast<int>(d.d_k),
            dv = static_cast<int>(d.d_v), H = static_cast<int>(d.heads);
  const int64_t b = blockIdx.x / H, h = blockIdx.x % H, kb = b / d.kv_group, kvh = h / (H / d.kv_heads);
  const int64_t ldq = H * dk, ldo = H * dv, ldk = d.kv_heads * dk, ldv = d.kv_heads * dv;
  float* ks = smem;                               // [S, dk + kPad]
  float* vs = ks + S * (dk + kPad);               // [S, dv + kPad]
  float* qrow = vs + S * (dv + kPad);             // [warps, dk]
  float* prow = qrow + kFusedWarps * dk;          // [warps, padded(S)]
  load_rows(ks, k + kb * S * ldk + kvh * dk, S, dk, ldk);
  load_rows(vs, v + kb * S * ldv + kvh * dv, S, dv, ldv);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* qw = qrow + warp * dk;
  float* pw = prow + warp * padded(S);
  for (int t = warp; t < T; t += kFusedWarps) {
    const float* qt = q + (b * T + t) * ldq + h * dk;
    for (int c = lane; c < dk; c += 32) qw[c] = qt[c];
    __syncwarp();
    // Keys [lo, n): the padding and causal masks, and a sliding window's start.
    const int n = static_cast<int>(visible_keys(S, T, b, t, causal, key_lengths)),
              lo = static_cast<int>(first_key(S, T, t, d.window, n));
    float mx = -INFINITY;
    for (int s = lo + lane; s < n; s += 32) {
      pw[s] = dot_rows<kVec>(qw, ks + s * (dk + kPad), dk) * scale;
      mx = fmaxf(mx, pw[s]);
    }
    mx = warp_max(mx);
    float sum = 0;
    for (int s = lo + lane; s < n; s += 32) {
      pw[s] = expf(pw[s] - mx);
      sum += pw[s];
    }
    sum = warp_sum(sum);
    const float inv = n > lo ? 1.0f / sum : 0.0f;
    float* p = probs + ((b * H + h) * T + t) * S;
    const uint64_t base = static_cast<uint64_t>(((b * H + h) * T + t) * S);
    for (int s = lane; s < S; s += 32) {
      // lo ≤ s < n in one unsigned comparison (s − lo wraps around below lo), as cheap as s < n.
      const float w = static_cast<unsigned>(s - lo) < static_cast<unsigned>(n - lo) ? pw[s] * inv : 0.0f;
      p[s] = w;
      pw[s] = drop ? __fmul_rn(w, keep_factor(rng, base + static_cast<uint64_t>(s), threshold, keep_scale)) : w;
    }
    __syncwarp();
    float* o = out + (b * T + t) * ldo + h * dv;
    weighted_columns<kVec>(pw + lo, 1, vs + lo * (dv + kPad), dv + kPad, n - lo, dv,
                           [&](int c, float acc) { o[c] = acc; });
    __syncwarp();
  }
}

// The backward's shared memory: one key/value head's keys and values, one query head's rows.
struct BackwardRows {
  float *qs, *ks, *vs, *dos, *dz, *pd;
  int ldz;
};

// One query head h of entry b, with its key/value head's K and V in shared memory: loads Q and dO,
// then dq's rows, and adds its dv, dk sums into the key rows (one warp per key row, so the query
// heads sharing a key/value head add in head order, the same on every run).
template <bool kVec>
__device__ void head_backward(const AttentionDims& d, int64_t b, int64_t h, int64_t kvh, const float* q, float scale,
                              float threshold, float keep_scale, bool drop, const RngStream& rng, const float* probs,
                              const float* dout, float* dq, float* dk, float* dv, const BackwardRows& m) {
  const int T = static_cast<int>(d.queries), S = static_cast<int>(d.keys), Dk = static_cast<int>(d.d_k),
            Dv = static_cast<int>(d.d_v), H = static_cast<int>(d.heads), ldz = m.ldz;
  const int64_t ldq = H * Dk, ldo = H * Dv, ldk = d.kv_heads * Dk, ldv = d.kv_heads * Dv;
  load_rows(m.qs, q + b * T * ldq + h * Dk, T, Dk, ldq);
  load_rows(m.dos, dout + b * T * ldo + h * Dv, T, Dv, ldo);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* P = probs + (b * H + h) * T * S;
  const uint64_t base = static_cast<uint64_t>((b * H + h) * T * S);
  // Query rows: dP = dropout(dO·Vᵀ), dZ = P ⊙ (dP − Σ dP ⊙ P), dQ += scale · dZ · K.
  for (int t = warp; t < T; t += kBackwardWarps) {
    const float* dot_row = m.dos + t * (Dv + kPad);
    float* z = m.dz + t * ldz;
    float dot = 0;
    for (int s = lane; s < S; s += 32) {
      float g = dot_rows<kVec>(dot_row, m.vs + s * (Dv + kPad), Dv);
      const float p = P[t * S + s];
      if (drop) {
        const float keep = keep_factor(rng, base + static_cast<uint64_t>(t * S + s), threshold, keep_scale);
        g = __fmul_rn(g, keep);
        m.pd[t * ldz + s] = __fmul_rn(p, keep);
      } else {
        m.pd[t * ldz + s] = p;
      }
      z[s] = g;
      dot += g * p;
    }
    dot = warp_sum(dot);
    for (int s = lane; s < S; s += 32) z[s] = P[t * S + s] * (z[s] - dot);
    __syncwarp();
    float* dqt = dq + (b * T + t) * ldq + h * Dk;
    weighted_columns<kVec>(z, 1, m.ks, Dk + kPad, S, Dk, [&](int c, float acc) { dqt[c] += scale * acc; });
  }
  __syncthreads();
  // Key rows: dV += P̃ᵀ · dO, dK += scale · dZᵀ · Q.
  for (int s = warp; s < S; s += kBackwardWarps) {
    float* dvs = dv + (b * S + s) * ldv + kvh * Dv;
    weighted_columns<kVec>(m.pd + s, ldz, m.dos, Dv + kPad, T, Dv, [&](int c, float acc) { dvs[c] += acc; });
    float* dks = dk + (b * S + s) * ldk + kvh * Dk;
    weighted_columns<kVec>(m.dz + s, ldz, m.qs, Dk + kPad, T, Dk, [&](int c, float acc) { dks[c] += scale * acc; });
  }
  __syncthreads();  // before the next query head's rows replace these
}

// One block per (entry, key/value head), taking the query heads that read it one after another.
template <bool kVec>
__global__ void __launch_bounds__(32 * kBackwardWarps)
    fused_attention_backward_kernel(AttentionDims d, const float* q, const float* k, const float* v, float scale,
                                    float threshold, float keep_scale, bool drop, RngStream rng, const float* probs,
                                    const float* dout, float* dq, float* dk, float* dv) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int T = static_cast<int>(d.queries), S = static_cast<int>(d.keys), Dk = static_cast<int>(d.d_k),
            Dv = static_cast<int>(d.d_v), KV = static_cast<int>(d.kv_heads), group = static_cast<int>(d.heads) / KV;
  const int64_t b = blockIdx.x / KV, kvh = blockIdx.x % KV;
  const int64_t ldk = KV * Dk, ldv = KV * Dv;
  BackwardRows m;
  m.ldz = padded(S);
  m.qs = smem;                        // [T, Dk + kPad]
  m.ks = m.qs + T * (Dk + kPad);      // [S, Dk + kPad]
  m.vs = m.ks + S * (Dk + kPad);      // [S, Dv + kPad]
  m.dos = m.vs + S * (Dv + kPad);     // [T, Dv + kPad]
  m.dz = m.dos + T * (Dv + kPad);     // [T, ldz]
  m.pd = m.dz + T * m.ldz;            // [T, ldz]: P̃, the weights after dropout
  load_rows(m.ks, k + b * S * ldk + kvh * Dk, S, Dk, ldk);
  load_rows(m.vs, v + b * S * ldv + kvh * Dv, S, Dv, ldv);
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
    head_backward<kVec>(d, b, h, kvh, q, scale, threshold, keep_scale, drop, rng, probs, dout, dq, dk, dv, m);
}

// Shared memory the fused kernels need, in bytes; beyond fused_limit() the products path runs.
constexpr size_t kFusedLimit = 160 * 1024;
// kFusedLimit, or less on a GPU that lets a block have less (sm_75: 64 KB, sm_86: 99 KB).
size_t fused_limit() {
  static const size_t limit = [] {
    int device = 0, optin = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "cudaDeviceGetAttribute");
    return std::min(kFusedLimit, static_cast<size_t>(optin));
  }();
  return limit;
}
size_t fused_forward_bytes(const AttentionDims& d) {
  return sizeof(float) * static_cast<size_t>(d.keys * (d.d_k + kPad) + d.keys * (d.d_v + kPad) +
                                             kFusedWarps * d.d_k + kFusedWarps * padded(static_cast<int>(d.keys)));
}
size_t fused_backward_bytes(const AttentionDims& d) {
  return sizeof(float) * static_cast<size_t>(d.queries * (d.d_k + kPad) + d.keys * (d.d_k + kPad) +
                                             d.keys * (d.d_v + kPad) + d.queries * (d.d_v + kPad) +
                                             2 * d.queries * padded(static_cast<int>(d.keys)));
}
// The fused kernels' vector reads need d_k and d_v in multiples of 4 (and so every shared row
// 16-byte aligned); other widths run the same kernels with plain reads.
bool vector_widths(const AttentionDims& d) { return d.d_k % 4 == 0 && d.d_v % 4 == 0; }

// Raises a kernel's dynamic shared memory limit to fused_limit() (above the default 48 KB).
template <class K>
void allow_shared(K kernel) {
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(fused_limit())),
        "cudaFuncSetAttribute");
}

}  // namespace

bool fused_attention(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                     const int32_t* key_lengths, float scale, double dropout_rate, const RngStream& rng, float* probs,
                     float* out) {
  const int64_t B = d.batch, H = d.heads;
  const auto threshold = static_cast<float>(dropout_rate), keep_scale = static_cast<float>(1.0 / (1.0 - dropout_rate));
  if (const size_t bytes = fused_forward_bytes(d); bytes <= fused_limit()) {
    static const bool allowed =
        (allow_shared(fused_attention_kernel<true>), allow_shared(fused_attention_kernel<false>), true);
    (void)allowed;
    (vector_widths(d) ? fused_attention_kernel<true> : fused_attention_kernel<false>)
        <<<static_cast<unsigned>(B * H), 32 * kFusedWarps, bytes>>>(d, q, k, v, causal, key_lengths, scale, threshold,
                                                                   keep_scale, dropout_rate > 0, rng, probs, out);
    launched("attention (fused)");
    return true;
  }
  return false;
}

bool fused_attention_backward(const AttentionDims& d, const float* q, const float* k, const float* v, float scale,
                              double dropout_rate, const RngStream& rng, const float* probs, const float* dout,
                              float* dq, float* dk, float* dv) {
  const int64_t B = d.batch, KV = d.kv_heads;
  if (const size_t bytes = fused_backward_bytes(d); bytes <= fused_limit()) {
    static const bool allowed = (allow_shared(fused_attention_backward_kernel<true>),
                                 allow_shared(fused_attention_backward_kernel<false>), true);
    (void)allowed;
    (vector_widths(d) ? fused_attention_backward_kernel<true> : fused_attention_backward_kernel<false>)
        <<<static_cast<unsigned>(B * KV), 32 * kBackwardWarps, bytes>>>(
            d, q, k, v, scale, static_cast<float>(dropout_rate), static_cast<float>(1.0 / (1.0 - dropout_rate)),
            dropout_rate > 0, rng, probs, dout, dq, dk, dv);
    launched("attention_backward (fused)");
    return true;
  }
  return false;
}

}  // namespace tfm::cuda
