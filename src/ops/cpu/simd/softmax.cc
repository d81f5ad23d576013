#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/softmax_row.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

template <class T>
void softmax(int64_t rows, int64_t cols, const T* x, T* y) {
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) softmax_row(cols, x + r * cols, y + r * cols);
}

template <class T>
void softmax_backward(int64_t rows, int64_t cols, const T* y, const T* dy, T* dx) {
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) softmax_row_backward<T, true>(cols, y + r * cols, dy + r * cols, dx + r * cols);
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_SOFTMAX)

TFM_SIMD_END
