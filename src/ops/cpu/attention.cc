#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/cpu/dropout_mask.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/softmax_row.h"

namespace tfm::cpu {

namespace {
// Where head h of batch entry b starts in each tensor, and the row strides (heads side by side).
struct HeadView {
  int64_t b, h;
  int64_t q_off, k_off, v_off, o_off, p_off;
};
HeadView head_view(const AttentionDims& d, int64_t bh) {
  const int64_t b = bh / d.heads, h = bh % d.heads;
  return {b,
          h,
          b * d.queries * d.heads * d.d_k + h * d.d_k,
          b / d.kv_group * d.keys * d.heads * d.d_k + h * d.d_k,
          b / d.kv_group * d.keys * d.heads * d.d_v + h * d.d_v,
          b * d.queries * d.heads * d.d_v + h * d.d_v,
          bh * d.queries * d.keys};
}
// Number of keys query t may see: the padding length, cut by the causal mask.
int64_t visible_keys(const AttentionDims& d, int64_t b, int64_t t, bool causal, const int32_t* key_lengths) {
  int64_t n = key_lengths ? std::clamp<int64_t>(key_lengths[b], 0, d.keys) : d.keys;
  if (causal) n = std::min(n, std::max<int64_t>(0, t + (d.keys - d.queries) + 1));
  return n;
}
// One query against its visible keys: p = softmax(scale · q·k_s), out = Σ_s p_s · v_s.
template <class T>
void single_query(const AttentionDims& d, const T* q, const T* k, const T* v, int64_t ldk, int64_t ldv, int64_t n,
                  T scale, T* p, T* out) {
  for (int64_t s = 0; s < n; ++s) {
    const T* ks = k + s * ldk;
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t i = 0; i < d.d_k; ++i) dot += q[i] * ks[i];
    p[s] = scale * dot;
  }
  if (n > 0) softmax_row(n, p, p);
  std::fill(p + n, p + d.keys, T(0));
  std::fill_n(out, d.d_v, T(0));
  for (int64_t s = 0; s < n; ++s) {
    const T* vs = v + s * ldv;
    const T w = p[s];
#pragma omp simd
    for (int64_t i = 0; i < d.d_v; ++i) out[i] += w * vs[i];
  }
}
}  // namespace

template <class T>
void attention(const AttentionDims& d, const T* q, const T* k, const T* v, bool causal, const int32_t* key_lengths,
               double dropout, const RngStream& rng, T* probs, T* out) {
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  const int64_t ldq = d.heads * d.d_k, ldv = d.heads * d.d_v, tile = d.queries * d.keys;
#pragma omp parallel if (d.batch * d.heads * d.queries * d.keys * (d.d_k + d.d_v) >= (1 << 16))
  {
    std::vector<T> dropped(dropout > 0 ? static_cast<size_t>(tile) : 0);
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < d.batch * d.heads; ++bh) {
      const HeadView hv = head_view(d, bh);
      T* p = probs + hv.p_off;  // [T, S]
      if (d.queries == 1 && dropout == 0) {  // a decoding step: plain loops beat two tiny BLAS calls
        single_query(d, q + hv.q_off, k + hv.k_off, v + hv.v_off, ldq, ldv,
                     visible_keys(d, hv.b, 0, causal, key_lengths), scale, p, out + hv.o_off);
        continue;
      }
      // Only the keys some query can see enter the products: keys past them may hold anything
      // (a decoding cache's unfilled positions), and skipping them saves work.
      int64_t seen = 0;
      for (int64_t t = 0; t < d.queries; ++t) seen = std::max(seen, visible_keys(d, hv.b, t, causal, key_lengths));
      gemm_ld<T>(false, true, d.queries, seen, d.d_k, scale, q + hv.q_off, ldq, k + hv.k_off, ldq, T(0), p, d.keys);
      for (int64_t t = 0; t < d.queries; ++t) {
        T* row = p + t * d.keys;
        const int64_t n = visible_keys(d, hv.b, t, causal, key_lengths);
        if (n > 0) softmax_row(n, row, row);
        std::fill(row + n, row + d.keys, T(0));  // masked keys: exactly zero; all masked: all zero
      }
      const T* weights = p;
      if (dropout > 0) {
        apply_dropout<T, false>(tile, static_cast<uint64_t>(hv.p_off), p, dropout, rng, dropped.data());
        weights = dropped.data();
      }
      if (seen > 0) {
        gemm_ld<T>(false, false, d.queries, d.d_v, seen, T(1), weights, d.keys, v + hv.v_off, ldv, T(0),
                   out + hv.o_off, ldv);
      } else {
        for (int64_t t = 0; t < d.queries; ++t) std::fill_n(out + hv.o_off + t * ldv, d.d_v, T(0));
      }
    }
  }
}

template <class T>
void attention_backward(const AttentionDims& d, const T* q, const T* k, const T* v, bool causal,
                        const int32_t* key_lengths, double dropout, const RngStream& rng, const T* probs,
                        const T* dout, T* dq, T* dk, T* dv) {
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  const int64_t ldq = d.heads * d.d_k, ldv = d.heads * d.d_v, tile = d.queries * d.keys;
#pragma omp parallel if (d.batch * d.heads * d.queries * d.keys * (d.d_k + d.d_v) >= (1 << 16))
  {
    std::vector<T> dropped(dropout > 0 ? static_cast<size_t>(tile) : 0);
    std::vector<T> dp(static_cast<size_t>(tile));
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < d.batch * d.heads; ++bh) {
      const HeadView hv = head_view(d, bh);
      const T* p = probs + hv.p_off;
      const T* weights = p;
      if (dropout > 0) {
        apply_dropout<T, false>(tile, static_cast<uint64_t>(hv.p_off), p, dropout, rng, dropped.data());
        weights = dropped.data();
      }
      // dV += P̃ᵀ · dO
      gemm_ld<T>(true, false, d.keys, d.d_v, d.queries, T(1), weights, d.keys, dout + hv.o_off, ldv, T(1),
                 dv + hv.v_off, ldv);
      // dP̃ = dO · Vᵀ, then through dropout and softmax (in place): dZ
      gemm_ld<T>(false, true, d.queries, d.keys, d.d_v, T(1), dout + hv.o_off, ldv, v + hv.v_off, ldv, T(0),
                 dp.data(), d.keys);
      if (dropout > 0)
        apply_dropout<T, false>(tile, static_cast<uint64_t>(hv.p_off), dp.data(), dropout, rng, dp.data());
      for (int64_t t = 0; t < d.queries; ++t)
        softmax_row_backward<T, false>(d.keys, p + t * d.keys, dp.data() + t * d.keys, dp.data() + t * d.keys);
      // dQ += dZ · K / √d_k ;  dK += dZᵀ · Q / √d_k
      gemm_ld<T>(false, false, d.queries, d.d_k, d.keys, scale, dp.data(), d.keys, k + hv.k_off, ldq, T(1),
                 dq + hv.q_off, ldq);
      gemm_ld<T>(true, false, d.keys, d.d_k, d.queries, scale, dp.data(), d.keys, q + hv.q_off, ldq, T(1),
                 dk + hv.k_off, ldq);
    }
  }
}

#define INSTANTIATE(T)                                                                                          \
  template void attention<T>(const AttentionDims&, const T*, const T*, const T*, bool, const int32_t*, double, \
                             const RngStream&, T*, T*);                                                         \
  template void attention_backward<T>(const AttentionDims&, const T*, const T*, const T*, bool, const int32_t*, \
                                      double, const RngStream&, const T*, const T*, T*, T*, T*);
TFM_INSTANTIATE_FLOAT(INSTANTIATE)

}  // namespace tfm::cpu
