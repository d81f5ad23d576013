#include <cstring>

#include "ops/cpu/kernels.h"

namespace tfm::cpu {

void copy_rows(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, const char* src, char* dst) {
#pragma omp parallel for schedule(static) if (n * copy_bytes >= (1 << 18))
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(dst + i * row_bytes, src + static_cast<int64_t>(indices[i]) * row_bytes, static_cast<size_t>(copy_bytes));
}

void write_position(int64_t batch, int64_t length, int64_t row_bytes, int64_t position, const char* x, char* cache) {
  for (int64_t b = 0; b < batch; ++b)
    std::memcpy(cache + (b * length + position) * row_bytes, x + b * row_bytes, static_cast<size_t>(row_bytes));
}

}  // namespace tfm::cpu
