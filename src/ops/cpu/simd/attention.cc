#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/dropout_mask.h"
#include "ops/cpu/simd/small_head.h"
#include "ops/cpu/simd/softmax_row.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

namespace {
// Where head h of batch entry b starts in each tensor (heads side by side; k and v hold the
// key/value head kv_head(d, h) that query head h reads).
struct HeadView {
  int64_t b, h;
  int64_t q_off, k_off, v_off, o_off, p_off;
};
int64_t kv_head(const AttentionDims& d, int64_t h) { return h / (d.heads / d.kv_heads); }
HeadView head_view(const AttentionDims& d, int64_t bh) {
  const int64_t b = bh / d.heads, h = bh % d.heads, kvh = kv_head(d, h);
  return {b,
          h,
          b * d.queries * d.heads * d.d_k + h * d.d_k,
          b / d.kv_group * d.keys * d.kv_heads * d.d_k + kvh * d.d_k,
          b / d.kv_group * d.keys * d.kv_heads * d.d_v + kvh * d.d_v,
          b * d.queries * d.heads * d.d_v + h * d.d_v,
          bh * d.queries * d.keys};
}
// Number of keys query t may see: the padding length, cut by the causal mask.
int64_t visible_keys(const AttentionDims& d, int64_t b, int64_t t, bool causal, const int32_t* key_lengths) {
  int64_t n = key_lengths ? std::clamp<int64_t>(key_lengths[b], 0, d.keys) : d.keys;
  if (causal) n = std::min(n, std::max<int64_t>(0, t + (d.keys - d.queries) + 1));
  return n;
}
// The first key query t may see, of its n visible ones: keys before its sliding window are masked
// too (query t is at position t + S − T); 0 without a window, n when the window holds none of them.
int64_t first_key(const AttentionDims& d, int64_t t, int64_t n) {
  return d.window > 0 ? std::clamp<int64_t>(t + (d.keys - d.queries) - d.window + 1, 0, n) : 0;
}
// Where a decoding query's keys lie: key s of query entry b is row rows[s] of k and v viewed as
// [N, H·d], for all S positions: the entry's own rows, or with key_rows the rows of each
// position's slab that its hypothesis reads (every entry of key_rows is checked to be in a slab).
void key_positions(const AttentionDims& d, int64_t b, const int32_t* key_rows, int64_t* rows) {
  if (key_rows) {
    const int32_t* r = key_rows + b * d.keys;
    for (int64_t s = 0; s < d.keys; ++s) rows[s] = s * d.kv_rows + r[s];
  } else {
    const int64_t first = b / d.kv_group * d.keys;
    for (int64_t s = 0; s < d.keys; ++s) rows[s] = first + s;
  }
}

// One query against its n visible keys: p = softmax(scale · q·k_s), out = Σ_s p_s · v_s, with k
// and v at the head's first column and key s in row rows[s].
template <class T>
void single_query(const AttentionDims& d, const T* q, const T* k, const T* v, const int64_t* rows, int64_t ldk,
                  int64_t ldv, int64_t n, int64_t keys, T scale, T* p, T* out) {
  for (int64_t s = 0; s < n; ++s) {
    const T* ks = k + rows[s] * ldk;
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t i = 0; i < d.d_k; ++i) dot += q[i] * ks[i];
    p[s] = scale * dot;
  }
  if (n > 0) softmax_row(n, p, p);
  std::fill(p + n, p + keys, T(0));
  std::fill_n(out, d.d_v, T(0));
  for (int64_t s = 0; s < n; ++s) {
    const T* vs = v + rows[s] * ldv;
    const T w = p[s];
#pragma omp simd
    for (int64_t i = 0; i < d.d_v; ++i) out[i] += w * vs[i];
  }
}

// The same for float with a per-head width of kLanes·R: the build's vectors (fast_exp.h), q and the
// output held in registers, four keys' dot products at a time summed across lanes together (the
// plain loops above end each dot product in a scalar sum and send the output through memory for
// every key). With the beams' loop order below: BM_DecodeAttention 1.6–1.9× (docs/performance.md).
template <int R>
void single_query_f32(const float* q, const float* k, const float* v, const int64_t* rows, int64_t ldk, int64_t ldv,
                      int64_t n, int64_t keys, float scale, float* p, float* out) {
  f32v qr[R];
  for (int r = 0; r < R; ++r) qr[r] = loadv(q + kLanes * r) * scale;
  int64_t s = 0;
  for (; s + 4 <= n; s += 4) {
    f32v a[4];
    for (int j = 0; j < 4; ++j) {
      const float* ks = k + rows[s + j] * ldk;
      a[j] = qr[0] * loadv(ks);
      for (int r = 1; r < R; ++r) a[j] += qr[r] * loadv(ks + kLanes * r);
    }
    sum4(a, p + s);
  }
  for (; s < n; ++s) {
    const float* ks = k + rows[s] * ldk;
    f32v a = qr[0] * loadv(ks);
    for (int r = 1; r < R; ++r) a += qr[r] * loadv(ks + kLanes * r);
    p[s] = sumv(a);
  }
  if (n > 0) softmax_row(n, p, p);
  std::fill(p + n, p + keys, 0.0f);
  f32v o[R] = {};
  for (s = 0; s < n; ++s) {
    const float* vs = v + rows[s] * ldv;
    const float w = p[s];
    for (int r = 0; r < R; ++r) o[r] += w * loadv(vs + kLanes * r);
  }
  std::memcpy(out, o, sizeof o);
}

// One decoding query of one head, seeing keys [first, n): the vector kernel when the width allows,
// else the plain loops.
template <class T>
void decode_query(const AttentionDims& d, const T* q, const T* k, const T* v, const int64_t* all_rows, int64_t ldk,
                  int64_t ldv, int64_t first, int64_t n_visible, T scale, T* all_p, T* out) {
  std::fill(all_p, all_p + first, T(0));  // before the window
  const int64_t *rows = all_rows + first, n = n_visible - first, keys = d.keys - first;
  T* p = all_p + first;
  if constexpr (std::is_same_v<T, float>) {
    if (d.d_k == d.d_v && d.d_k % kLanes == 0) {
      switch (d.d_k / kLanes) {
        case 1: return single_query_f32<1>(q, k, v, rows, ldk, ldv, n, keys, scale, p, out);
        case 2: return single_query_f32<2>(q, k, v, rows, ldk, ldv, n, keys, scale, p, out);
        case 4: return single_query_f32<4>(q, k, v, rows, ldk, ldv, n, keys, scale, p, out);
        case 8: return single_query_f32<8>(q, k, v, rows, ldk, ldv, n, keys, scale, p, out);
        case 16: return single_query_f32<16>(q, k, v, rows, ldk, ldv, n, keys, scale, p, out);
        default: break;
      }
    }
  }
  single_query(d, q, k, v, rows, ldk, ldv, n, keys, scale, p, out);
}

// A head width small_head.h's loops take: 1 to 4 whole vectors of the build (wider heads ran slower
// than BLAS: d_k 64 at the avx2 level, 45–60 GFLOP/s against 67 in BM_AttentionForward).
bool small_width(int64_t d) { return d % kLanes == 0 && d / kLanes >= 1 && d / kLanes <= 4; }
#define TFM_SMALL_HEAD_CASES(F, ...)                                                                  \
  switch (width / kLanes) {                                                                          \
    case 1: return F<1>(__VA_ARGS__);                                                                \
    case 2: return F<2>(__VA_ARGS__);                                                                \
    case 3: return F<3>(__VA_ARGS__);                                                                \
    case 4: return F<4>(__VA_ARGS__);                                                                \
    case 5: return F<5>(__VA_ARGS__);                                                                \
    case 6: return F<6>(__VA_ARGS__);                                                                \
    case 7: return F<7>(__VA_ARGS__);                                                                \
    case 8: return F<8>(__VA_ARGS__);                                                                \
    default: break;                                                                                  \
  }
void small_scores(int64_t width, int64_t queries, int64_t n, float scale, const float* q, int64_t ldq, const float* k,
                  int64_t ldk, float* p, int64_t ldp) {
  TFM_SMALL_HEAD_CASES(small_head_scores, queries, n, scale, q, ldq, k, ldk, p, ldp)
}
void small_values(int64_t width, int64_t queries, int64_t n, const float* w, int64_t ldw, const float* v, int64_t ldv,
                  float* out, int64_t ldo) {
  TFM_SMALL_HEAD_CASES(small_head_values, queries, n, w, ldw, v, ldv, out, ldo)
}
#undef TFM_SMALL_HEAD_CASES

// Starts loading the first n keys and values of one head (k, v at its first column) into the
// cache: a head's keys lie 64-float pieces apart by a row's whole width (or in other slabs), a
// pattern the hardware prefetcher does not follow, so without this each head block waits on memory.
template <class T>
void prefetch_head(const AttentionDims& d, const T* k, const T* v, const int64_t* rows, int64_t ldk, int64_t ldv,
                   int64_t n) {
  constexpr int64_t kLine = 64 / sizeof(T);
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t c = 0; c < d.d_k; c += kLine) __builtin_prefetch(k + rows[s] * ldk + c);
    for (int64_t c = 0; c < d.d_v; c += kLine) __builtin_prefetch(v + rows[s] * ldv + c);
  }
}

// Every query of one (entry, head), i = b·H + h, by products: scores for the keys some query can
// see, the masks and softmax row by row, dropout, then the weighted sum of the values.
template <class T>
void head_forward(const AttentionDims& d, int64_t i, const T* q, const T* k, const T* v, bool causal,
                  const int32_t* key_lengths, double dropout, const RngStream& rng, T* dropped, T* probs, T* out) {
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  const int64_t ldq = d.heads * d.d_k, ldk = d.kv_heads * d.d_k, ldo = d.heads * d.d_v, ldv = d.kv_heads * d.d_v;
  const HeadView hv = head_view(d, i);
  T* p = probs + hv.p_off;  // [T, S]
  // Only the keys some query can see, [first, seen), enter the products: keys past them may hold
  // anything (padding, or positions a cache has not filled yet), and skipping them saves work.
  int64_t seen = 0, first = d.keys;
  for (int64_t t = 0; t < d.queries; ++t) {
    const int64_t n = visible_keys(d, hv.b, t, causal, key_lengths);
    seen = std::max(seen, n);
    first = std::min(first, first_key(d, t, n));
  }
  first = std::min(first, seen);
  const bool small = std::is_same_v<T, float> && seen - first <= kSmallHeadKeys && small_width(d.d_k) &&
                     small_width(d.d_v);
  if constexpr (std::is_same_v<T, float>) {
    if (small)
      small_scores(d.d_k, d.queries, seen - first, scale, q + hv.q_off, ldq, k + hv.k_off + first * ldk, ldk,
                   p + first, d.keys);
  }
  if (!small)
    gemm_ld<T>(false, true, d.queries, seen - first, d.d_k, scale, q + hv.q_off, ldq, k + hv.k_off + first * ldk,
               ldk, T(0), p + first, d.keys);
  for (int64_t t = 0; t < d.queries; ++t) {
    T* row = p + t * d.keys;
    const int64_t n = visible_keys(d, hv.b, t, causal, key_lengths), lo = first_key(d, t, n);
    std::fill(row, row + lo, T(0));  // before the window
    if (n > lo) softmax_row(n - lo, row + lo, row + lo);
    std::fill(row + n, row + d.keys, T(0));  // masked keys: exactly zero; all masked: all zero
  }
  const T* weights = p;
  if (dropout > 0) {
    apply_dropout<T>(d.queries * d.keys, static_cast<uint64_t>(hv.p_off), p, dropout, rng, dropped);
    weights = dropped;
  }
  if (seen > first && small) {
    if constexpr (std::is_same_v<T, float>)
      small_values(d.d_v, d.queries, seen - first, weights + first, d.keys, v + hv.v_off + first * ldv, ldv,
                   out + hv.o_off, ldo);
  } else if (seen > first) {
    gemm_ld<T>(false, false, d.queries, d.d_v, seen - first, T(1), weights + first, d.keys,
               v + hv.v_off + first * ldv, ldv, T(0), out + hv.o_off, ldo);
  } else {
    for (int64_t t = 0; t < d.queries; ++t) std::fill_n(out + hv.o_off + t * ldo, d.d_v, T(0));
  }
}
}  // namespace

template <class T>
void attention(const AttentionDims& d, const T* q, const T* k, const T* v, bool causal, const int32_t* key_lengths,
               const int32_t* key_rows, double dropout, const RngStream& rng, T* probs, T* out) {
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  const int64_t ldk = d.kv_heads * d.d_k, ldv = d.kv_heads * d.d_v;
  const bool decoding = d.queries == 1 && dropout == 0;  // plain loops beat two tiny BLAS calls
#pragma omp parallel if (d.batch * d.heads * d.queries * d.keys * (d.d_k + d.d_v) >= (1 << 16))
  {
    std::vector<T> dropped(dropout > 0 ? static_cast<size_t>(d.queries * d.keys) : 0);
    // Decoding: the rows of the keys of this thread's current group and of the next one.
    std::vector<int64_t> rows(decoding ? static_cast<size_t>(d.keys) : 0), next_rows(rows.size());
    int64_t rows_of = -1, next_of = -1;  // the groups they hold
#pragma omp for schedule(static)
    for (int64_t i = 0; i < d.batch * d.heads; ++i) {
      if (!decoding) {
        head_forward(d, i, q, k, v, causal, key_lengths, dropout, rng, dropped.data(), probs, out);
        continue;
      }
      // The kv_group queries that share one head's keys and values run one after the other,
      // while those keys and values are in the L1 cache (beams over one encoder output).
      const int64_t group = i / (d.heads * d.kv_group), h = i / d.kv_group % d.heads, j = i % d.kv_group;
      const HeadView hv = head_view(d, (group * d.kv_group + j) * d.heads + h);
      if (rows_of != group) {
        if (next_of == group) {
          std::swap(rows, next_rows);
          std::swap(rows_of, next_of);
        } else {
          key_positions(d, hv.b, key_rows, rows.data());
          rows_of = group;
        }
      }
      if (j == 0 && i + d.kv_group < d.batch * d.heads) {  // the next head block, while this one computes
        const int64_t next = i + d.kv_group, next_group = next / (d.heads * d.kv_group),
                      next_kvh = kv_head(d, next / d.kv_group % d.heads), next_b = next_group * d.kv_group;
        if (next_group != group && next_of != next_group) {
          key_positions(d, next_b, key_rows, next_rows.data());
          next_of = next_group;
        }
        const int64_t n = visible_keys(d, next_b, 0, causal, key_lengths), lo = first_key(d, 0, n);
        prefetch_head(d, k + next_kvh * d.d_k, v + next_kvh * d.d_v,
                      (next_group != group ? next_rows.data() : rows.data()) + lo, ldk, ldv, n - lo);
      }
      const int64_t kvh = kv_head(d, h), n = visible_keys(d, hv.b, 0, causal, key_lengths);
      decode_query(d, q + hv.q_off, k + kvh * d.d_k, v + kvh * d.d_v, rows.data(), ldk, ldv, first_key(d, 0, n), n,
                   scale, probs + hv.p_off, out + hv.o_off);
    }
  }
}

namespace {
// The backward of one (entry, head), bh = b·H + h, accumulating into its key/value head's dk, dv.
// dp: T·S scratch; dropped: T·S scratch with dropout.
template <class T>
void head_backward(const AttentionDims& d, int64_t bh, const T* q, const T* k, const T* v, double dropout,
                   const RngStream& rng, const T* probs, const T* dout, T* dq, T* dk, T* dv, T* dp, T* dropped) {
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  const int64_t ldq = d.heads * d.d_k, ldk = d.kv_heads * d.d_k, ldo = d.heads * d.d_v, ldv = d.kv_heads * d.d_v,
                tile = d.queries * d.keys;
  const HeadView hv = head_view(d, bh);
  const T* p = probs + hv.p_off;
  const T* weights = p;
  if (dropout > 0) {
    apply_dropout<T>(tile, static_cast<uint64_t>(hv.p_off), p, dropout, rng, dropped);
    weights = dropped;
  }
  // dV += P̃ᵀ · dO
  gemm_ld<T>(true, false, d.keys, d.d_v, d.queries, T(1), weights, d.keys, dout + hv.o_off, ldo, T(1), dv + hv.v_off,
             ldv);
  // dP̃ = dO · Vᵀ, then through dropout and softmax (in place): dZ
  gemm_ld<T>(false, true, d.queries, d.keys, d.d_v, T(1), dout + hv.o_off, ldo, v + hv.v_off, ldv, T(0), dp, d.keys);
  if (dropout > 0) apply_dropout<T>(tile, static_cast<uint64_t>(hv.p_off), dp, dropout, rng, dp);
  for (int64_t t = 0; t < d.queries; ++t)
    softmax_row_backward<T, false>(d.keys, p + t * d.keys, dp + t * d.keys, dp + t * d.keys);
  // dQ += dZ · K / √d_k ;  dK += dZᵀ · Q / √d_k
  gemm_ld<T>(false, false, d.queries, d.d_k, d.keys, scale, dp, d.keys, k + hv.k_off, ldk, T(1), dq + hv.q_off, ldq);
  gemm_ld<T>(true, false, d.keys, d.d_k, d.queries, scale, dp, d.keys, q + hv.q_off, ldq, T(1), dk + hv.k_off, ldk);
}
}  // namespace

// The masks act through probs (masked weights are zero, so are their gradients). One thread takes
// all the query heads that share a key/value head, in order: their sums into dk and dv are then
// the same on every run, without atomics.
template <class T>
void attention_backward(const AttentionDims& d, const T* q, const T* k, const T* v, bool causal,
                        const int32_t* key_lengths, double dropout, const RngStream& rng, const T* probs,
                        const T* dout, T* dq, T* dk, T* dv) {
  (void)causal;
  (void)key_lengths;
  const int64_t tile = d.queries * d.keys, group = d.heads / d.kv_heads;
#pragma omp parallel if (d.batch * d.heads * d.queries * d.keys * (d.d_k + d.d_v) >= (1 << 16))
  {
    std::vector<T> dropped(dropout > 0 ? static_cast<size_t>(tile) : 0);
    std::vector<T> dp(static_cast<size_t>(tile));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < d.batch * d.kv_heads; ++i)
      for (int64_t bh = i * group; bh < (i + 1) * group; ++bh)
        head_backward(d, bh, q, k, v, dropout, rng, probs, dout, dq, dk, dv, dp.data(), dropped.data());
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_ATTENTION)

TFM_SIMD_END
