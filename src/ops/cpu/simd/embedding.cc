#include <algorithm>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

template <class T>
void embedding(int64_t n, int64_t d, const int32_t* ids, const T* table, double scale, T* out) {
  const T s = static_cast<T>(scale);
#pragma omp parallel for schedule(static) if (n * d >= (1 << 15))
  for (int64_t i = 0; i < n; ++i) {
    T* o = out + i * d;
    if (ids[i] < 0) {  // −1: a zero row
      std::fill_n(o, d, T(0));
      continue;
    }
    const T* row = table + static_cast<int64_t>(ids[i]) * d;
#pragma omp simd
    for (int64_t c = 0; c < d; ++c) o[c] = s * row[c];
  }
}

template <class T>
void embedding_backward(int64_t n, int64_t d, const int32_t* ids, const T* dout, double scale, T* dtable) {
  // Rows of the table repeat across ids, so threads split the columns instead: no two threads
  // touch the same element, and each element sums its contributions in id order.
  const T s = static_cast<T>(scale);
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (d + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n * d >= (1 << 15))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(d, c0 + kBlock);
    for (int64_t i = 0; i < n; ++i) {
      if (ids[i] < 0) continue;  // a zero row: no parameter to update
      T* row = dtable + static_cast<int64_t>(ids[i]) * d;
      const T* g = dout + i * d;
#pragma omp simd
      for (int64_t c = c0; c < c1; ++c) row[c] += s * g[c];
    }
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_EMBEDDING)

TFM_SIMD_END
