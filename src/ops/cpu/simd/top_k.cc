#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/cpu/simd/fast_exp.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

namespace {

// The selection goes by blocks, skipping every block whose largest value cannot enter the k
// best (most blocks, once the first ones have filled the list): the per-element compare and
// insert runs only where it can matter.
constexpr int64_t kBlock = 64;

// One row's k best so far, sorted best first (equal values keep the lower id first).
template <class T>
struct RowSelection {
  const T* z;               // the row's logits [V]
  const uint8_t* banned;    // [V]
  double* best;             // [k]
  int32_t* best_id;         // [k]
  int64_t k;
  int64_t n = 0;            // selected so far

  // Offers the columns [start, end), whose largest value is block_max.
  inline void select_block(int64_t start, int64_t end, T block_max) {
    if (n == k && block_max <= best[k - 1]) return;
    for (int64_t v = start; v < end; ++v) {
      const T x = z[v];
      if ((n == k && x <= best[k - 1]) || banned[v] || x != x) continue;  // NaN: never selected
      int64_t pos = n < k ? n : k - 1;  // insertion from the end; equal values keep the lower id first
      while (pos > 0 && best[pos - 1] < x) {
        best[pos] = best[pos - 1];
        best_id[pos] = best_id[pos - 1];
        --pos;
      }
      best[pos] = x;
      best_id[pos] = static_cast<int32_t>(v);
      n += n < k;
    }
  }

  // The selected values become log-probabilities (less the row's log Σ exp l); the places not
  // filled get −inf and id −1.
  inline void finish(double l) {
    for (int64_t j = 0; j < k; ++j) {
      if (j < n) {
        best[j] -= l;
      } else {
        best[j] = -std::numeric_limits<double>::infinity();
        best_id[j] = -1;
      }
    }
  }
};

template <class T>
inline T block_max_of(const T* z, int64_t start, int64_t end) {
  T m = z[start];
#pragma omp simd reduction(max : m)
  for (int64_t v = start; v < end; ++v) m = z[v] > m ? z[v] : m;
  return m;
}

// Float32 logits: one pass over the row (32,000 logits do not stay in L1): each block's maximum,
// its share of Σ exp(z − M) against the running maximum M (the sum rescaled when M grows), its
// selection. Returns the row's log Σ exp. Both select_row are always inlined into the loop over
// rows, so that a row's whole work compiles as one body.
[[gnu::always_inline]] inline double select_row(RowSelection<float>& sel, int64_t V) {
  const float* z = sel.z;
  float M = -std::numeric_limits<float>::infinity();
  f32v acc{};
  for (int64_t start = 0; start < V; start += kBlock) {
    const int64_t end = std::min(V, start + kBlock);
    const float block_max = block_max_of(z, start, end);
    if (block_max == -std::numeric_limits<float>::infinity()) {  // adds nothing to the sum
      sel.select_block(start, end, block_max);
      continue;
    }
    if (block_max > M) {
      acc *= std::exp(M - block_max);  // 0 · exp(−inf) = 0 before the first finite block
      M = block_max;
    }
    int64_t i = start;
    for (; i + kLanes <= end; i += kLanes) acc += expv(loadv(z + i) - M);
    if (i < end) acc += exp_tail(z + i, M, end - i);
    sel.select_block(start, end, block_max);
  }
  return double(M) + std::log(double(sumv(acc)));
}

// Float64 logits: the row's maximum, the selection by blocks, then the sum.
[[gnu::always_inline]] inline double select_row(RowSelection<double>& sel, int64_t V) {
  const double* z = sel.z;
  double max = z[0];
#pragma omp simd reduction(max : max)
  for (int64_t v = 0; v < V; ++v) max = z[v] > max ? z[v] : max;
  for (int64_t start = 0; start < V; start += kBlock) {
    const int64_t end = std::min(V, start + kBlock);
    sel.select_block(start, end, sel.n == sel.k ? block_max_of(z, start, end) : max);
  }
  return double(max) + std::log(double(sum_exp_shift(z, max, V)));
}

}  // namespace

template <class T>
void top_k_logprobs(int64_t rows, int64_t V, int64_t k, const T* logits, const uint8_t* banned, double* logp,
                    int32_t* ids, double* lse) {
#pragma omp parallel for schedule(static) if (rows * V >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    RowSelection<T> sel{logits + r * V, banned, logp + r * k, ids + r * k, k};
    const double l = select_row(sel, V);
    lse[r] = l;
    sel.finish(l);
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_TOP_K)

TFM_SIMD_END
