#include <cstring>
#include <vector>

#include "ops/cpu/kernels.h"

namespace tfm::cpu {

void copy_rows(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, const char* src, char* dst) {
#pragma omp parallel for schedule(static) if (n * copy_bytes >= (1 << 18))
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(dst + i * row_bytes, src + static_cast<int64_t>(indices[i]) * row_bytes, static_cast<size_t>(copy_bytes));
}

void permute_rows_in_place(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, char* data) {
  // Only rows that take another row's content move; their sources are copied aside first, so that
  // a row both read and overwritten is read before it changes. Scratch kept across calls.
  thread_local std::vector<int32_t> moved;
  thread_local std::vector<char> scratch;
  moved.clear();
  for (int64_t i = 0; i < n; ++i)
    if (indices[i] != i) moved.push_back(static_cast<int32_t>(i));
  const int64_t m = static_cast<int64_t>(moved.size());
  if (m == 0) return;
  if (scratch.size() < static_cast<size_t>(m * copy_bytes)) scratch.resize(static_cast<size_t>(m * copy_bytes));
  const int32_t* rows = moved.data();  // not the thread_locals inside the parallel loops
  char* aside = scratch.data();
#pragma omp parallel for schedule(static) if (m * copy_bytes >= (1 << 18))
  for (int64_t j = 0; j < m; ++j)
    std::memcpy(aside + j * copy_bytes, data + static_cast<int64_t>(indices[rows[j]]) * row_bytes,
                static_cast<size_t>(copy_bytes));
#pragma omp parallel for schedule(static) if (m * copy_bytes >= (1 << 18))
  for (int64_t j = 0; j < m; ++j)
    std::memcpy(data + static_cast<int64_t>(rows[j]) * row_bytes, aside + j * copy_bytes, static_cast<size_t>(copy_bytes));
}

void write_position(int64_t batch, int64_t length, int64_t row_bytes, int64_t position, const char* x, char* cache) {
#pragma omp parallel for schedule(static) if (batch * row_bytes >= (1 << 18))
  for (int64_t b = 0; b < batch; ++b)
    std::memcpy(cache + (b * length + position) * row_bytes, x + b * row_bytes, static_cast<size_t>(row_bytes));
}

}  // namespace tfm::cpu
