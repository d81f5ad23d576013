#pragma once
// The two products of one attention head's forward pass by the build's own vector loops, for the
// small heads of encoders and training batches (tens of queries and keys), where a BLAS call's
// packing and dispatch cost more than its product: scores = scale · Q·Kᵀ over a band of keys, and
// out = P·V. Each score is the dot product over d_k in order (then scaled), each output the sum over
// the band's keys in order, so a query's results do not depend on the other queries or on keys
// outside the band. Float only (double heads keep BLAS).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/cpu/simd/fast_exp.h"
#include "ops/cpu/simd/lane_sums.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

// Heads up to this many keys (in the band) take these loops, when d_k and d_v are 1 to 4 vectors.
constexpr int64_t kSmallHeadKeys = 128;

// The head's n rows of width d (ld apart in the tensor: all heads side by side, a power of two
// floats apart in most models, which maps them onto a few sets of the L1 cache) copied next to
// each other, in this thread's buffer.
inline const float* contiguous_rows(int64_t n, int64_t d, const float* rows, int64_t ld) {
  thread_local std::vector<float> buffer;
  buffer.resize(static_cast<size_t>(n * d));
  for (int64_t j = 0; j < n; ++j) std::memcpy(buffer.data() + j * d, rows + j * ld, static_cast<size_t>(d) * sizeof(float));
  return buffer.data();
}

// p[t, j] = scale · Σ_c q[t, c]·k[j, c] for t < queries, j < n (rows ldq, ldk and ldp apart), with
// d_k a whole number of vectors: q's row in registers, four keys at a time, their products summed
// across lanes together (sum4, as decoding's single_query_f32).
template <int R>
void small_head_scores(int64_t queries, int64_t n, float scale, const float* q, int64_t ldq, const float* k_rows,
                       int64_t ld_rows, float* p, int64_t ldp) {
  const float* k = contiguous_rows(n, kLanes * R, k_rows, ld_rows);
  constexpr int64_t ldk = kLanes * R;
  for (int64_t t = 0; t < queries; ++t) {
    f32v qr[R];
    for (int r = 0; r < R; ++r) qr[r] = loadv(q + t * ldq + kLanes * r);
    float* pt = p + t * ldp;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      f32v a[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const float* kj = k + (j + i) * ldk;
        a[i] = qr[0] * loadv(kj);
        for (int r = 1; r < R; ++r) a[i] += qr[r] * loadv(kj + kLanes * r);
      }
      sum4(a, pt + j);
      for (int i = 0; i < 4; ++i) pt[j + i] *= scale;
    }
    for (; j < n; ++j) {
      const float* kj = k + j * ldk;
      f32v a = qr[0] * loadv(kj);
      for (int r = 1; r < R; ++r) a += qr[r] * loadv(kj + kLanes * r);
      float s = 0.0f;
      for (int l = 0; l < kLanes; ++l) s += a[l];
      pt[j] = s * scale;
    }
  }
}

// out[t, c] = Σ_j w[t, j]·v[j, c] for t < queries, j < n in order, c < d_v = kLanes·R.
template <int R>
void small_head_values(int64_t queries, int64_t n, const float* w, int64_t ldw, const float* v_rows, int64_t ld_rows,
                       float* out, int64_t ldo) {
  const float* v = contiguous_rows(n, kLanes * R, v_rows, ld_rows);
  constexpr int64_t ldv = kLanes * R;
  for (int64_t t = 0; t < queries; ++t) {
    const float* wt = w + t * ldw;
    f32v acc[R] = {};
    for (int64_t j = 0; j < n; ++j) {
      const float x = wt[j];
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[r] += x * loadv(v + j * ldv + kLanes * r);
    }
    for (int r = 0; r < R; ++r) storev(out + t * ldo + kLanes * r, acc[r]);
  }
}

TFM_SIMD_END
