#pragma once
// One row of softmax, forward and backward; shared by the softmax and attention kernels.
#include <cmath>
#include <cstdint>

#include "ops/cpu/simd/fast_exp.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

// y = softmax(x) over n elements (n ≥ 1); x and y may alias.
template <class T>
inline void softmax_row(int64_t n, const T* x, T* y) {
  T max = x[0];
#pragma omp simd reduction(max : max)
  for (int64_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  const T sum = exp_shift_store(x, max, y, n);
  const T inv = T(1) / sum;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

// dx (=|+=) y ⊙ (dy − Σ dy ⊙ y). dx may alias dy when overwriting.
template <class T, bool kAccumulate>
inline void softmax_row_backward(int64_t n, const T* y, const T* dy, T* dx) {
  T dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int64_t i = 0; i < n; ++i) dot += dy[i] * y[i];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const T g = y[i] * (dy[i] - dot);
    if constexpr (kAccumulate) dx[i] += g; else dx[i] = g;
  }
}

TFM_SIMD_END
