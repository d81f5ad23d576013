#include <cmath>
#include <vector>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

template <class T>
void add_positional_encoding(int64_t batch, int64_t len, int64_t d, int64_t start, T* x) {
  // The table for these positions once, in double: angle = pos · 10000^(−2i/D).
  std::vector<T> pe(static_cast<size_t>(len * d));
  for (int64_t t = 0; t < len; ++t) {
    const double pos = static_cast<double>(start + t);
    for (int64_t c = 0; c < d; ++c) {
      const double rate = std::exp(-std::log(10000.0) * static_cast<double>(c - c % 2) / static_cast<double>(d));
      pe[t * d + c] = static_cast<T>(c % 2 == 0 ? std::sin(pos * rate) : std::cos(pos * rate));
    }
  }
#pragma omp parallel for schedule(static) if (batch * len * d >= (1 << 15))
  for (int64_t r = 0; r < batch * len; ++r) {
    const T* p = pe.data() + (r % len) * d;
    T* row = x + r * d;
#pragma omp simd
    for (int64_t c = 0; c < d; ++c) row[c] += p[c];
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_POSITIONAL)

TFM_SIMD_END
