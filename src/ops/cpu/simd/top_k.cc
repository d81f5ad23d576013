#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/cpu/simd/fast_exp.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

template <class T>
void top_k_logprobs(int64_t rows, int64_t V, int64_t k, const T* logits, const uint8_t* banned, double* logp,
                    int32_t* ids, double* lse) {
#pragma omp parallel for schedule(static) if (rows * V >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const T* z = logits + r * V;
    double* best = logp + r * k;
    int32_t* best_id = ids + r * k;
    int64_t n = 0;  // selected so far (sorted, best first)
    // The selection goes by blocks, skipping every block whose largest value cannot enter the k
    // best (most blocks, once the first ones have filled the list): the per-element compare and
    // insert runs only where it can matter.
    constexpr int64_t kBlock = 64;
    auto select_block = [&](int64_t start, int64_t end, T block_max) {
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
    };
    auto block_max_of = [&](int64_t start, int64_t end) {
      T m = z[start];
#pragma omp simd reduction(max : m)
      for (int64_t v = start; v < end; ++v) m = z[v] > m ? z[v] : m;
      return m;
    };
    double l;
    if constexpr (std::is_same_v<T, float>) {
      // One pass over the row (32,000 logits do not stay in L1): each block's maximum, its share of
      // Σ exp(z − M) against the running maximum M (the sum rescaled when M grows), its selection.
      float M = -std::numeric_limits<float>::infinity();
      f32v acc{};
      for (int64_t start = 0; start < V; start += kBlock) {
        const int64_t end = std::min(V, start + kBlock);
        const float block_max = block_max_of(start, end);
        if (block_max == -std::numeric_limits<float>::infinity()) {  // adds nothing to the sum
          select_block(start, end, block_max);
          continue;
        }
        if (block_max > M) {
          acc *= std::exp(M - block_max);  // 0 · exp(−inf) = 0 before the first finite block
          M = block_max;
        }
        int64_t i = start;
        for (; i + kLanes <= end; i += kLanes) acc += expv(loadv(z + i) - M);
        if (i < end) acc += exp_tail(z + i, M, end - i);
        select_block(start, end, block_max);
      }
      l = double(M) + std::log(double(sumv(acc)));
    } else {
      T max = z[0];
#pragma omp simd reduction(max : max)
      for (int64_t v = 0; v < V; ++v) max = z[v] > max ? z[v] : max;
      for (int64_t start = 0; start < V; start += kBlock) {
        const int64_t end = std::min(V, start + kBlock);
        select_block(start, end, n == k ? block_max_of(start, end) : max);
      }
      l = double(max) + std::log(double(sum_exp_shift(z, max, V)));
    }
    lse[r] = l;
    for (int64_t j = 0; j < k; ++j) {
      if (j < n) {
        best[j] -= l;
      } else {
        best[j] = -std::numeric_limits<double>::infinity();
        best_id[j] = -1;
      }
    }
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_TOP_K)

TFM_SIMD_END
