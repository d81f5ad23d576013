#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu/fast_exp.h"
#include "ops/cpu/kernels.h"

namespace tfm::cpu {

template <class T>
void top_k_logprobs(int64_t rows, int64_t V, int64_t k, const T* logits, const uint8_t* banned, double* logp,
                    int32_t* ids, double* lse) {
#pragma omp parallel for schedule(static) if (rows * V >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const T* z = logits + r * V;
    double* best = logp + r * k;
    int32_t* best_id = ids + r * k;
    int64_t n = 0;  // selected so far (sorted, best first)
    T max = z[0];
    for (int64_t v = 0; v < V; ++v) {
      const T x = z[v];
      max = x > max ? x : max;
      if ((n == k && x <= best[k - 1]) || banned[v]) continue;
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
    const double l = double(max) + std::log(double(sum_exp_shift(z, max, V)));
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

#define INSTANTIATE(T) \
  template void top_k_logprobs<T>(int64_t, int64_t, int64_t, const T*, const uint8_t*, double*, int32_t*, double*);
TFM_INSTANTIATE_FLOAT(INSTANTIATE)

}  // namespace tfm::cpu
