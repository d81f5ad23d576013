#include <algorithm>
#include <cstring>

#include "ops/cpu/kernels.h"

namespace tfm::cpu {

void copy_rows(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, const char* src, char* dst) {
#pragma omp parallel for schedule(static) if (n * copy_bytes >= (1 << 18))
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(dst + i * row_bytes, src + static_cast<int64_t>(indices[i]) * row_bytes, static_cast<size_t>(copy_bytes));
}

void copy_columns(int64_t rows, int64_t row_bytes, int64_t offset_bytes, int64_t width_bytes, const char* src,
                  char* dst) {
#pragma omp parallel for schedule(static) if (rows * width_bytes >= (1 << 18))
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * width_bytes, src + r * row_bytes + offset_bytes, static_cast<size_t>(width_bytes));
}

}  // namespace tfm::cpu
