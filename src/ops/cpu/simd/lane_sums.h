#pragma once
// Sums across the lanes of the build's float vectors (fast_exp.h's f32v), several vectors at once.
#include "ops/cpu/simd/fast_exp.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

// The four sums of a[0..3]'s lanes: out[j] = Σ lanes of a[j]. Lanes are added pairwise across the
// four vectors together (halves, then quarters, ...), fewer shuffles than four separate sums.
inline void sum4(const f32v a[4], float* out) {
#if TFM_SIMD_BYTES == 64
  const f32v x01 = __builtin_shufflevector(a[0], a[1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
                   __builtin_shufflevector(a[0], a[1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  const f32v x23 = __builtin_shufflevector(a[2], a[3], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
                   __builtin_shufflevector(a[2], a[3], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  f32v y = __builtin_shufflevector(x01, x23, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
           __builtin_shufflevector(x01, x23, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  y += __builtin_shufflevector(y, y, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  y += __builtin_shufflevector(y, y, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  out[0] = y[0], out[1] = y[4], out[2] = y[8], out[3] = y[12];
#elif TFM_SIMD_BYTES == 32
  const f32v x01 = __builtin_shufflevector(a[0], a[1], 0, 1, 2, 3, 8, 9, 10, 11) +
                   __builtin_shufflevector(a[0], a[1], 4, 5, 6, 7, 12, 13, 14, 15);
  const f32v x23 = __builtin_shufflevector(a[2], a[3], 0, 1, 2, 3, 8, 9, 10, 11) +
                   __builtin_shufflevector(a[2], a[3], 4, 5, 6, 7, 12, 13, 14, 15);
  f32v y = __builtin_shufflevector(x01, x23, 0, 1, 8, 9, 4, 5, 12, 13) +
           __builtin_shufflevector(x01, x23, 2, 3, 10, 11, 6, 7, 14, 15);
  y += __builtin_shufflevector(y, y, 1, 0, 3, 2, 5, 4, 7, 6);
  out[0] = y[0], out[1] = y[4], out[2] = y[2], out[3] = y[6];
#else
  const f32v x01 = __builtin_shufflevector(a[0], a[1], 0, 1, 4, 5) + __builtin_shufflevector(a[0], a[1], 2, 3, 6, 7);
  const f32v x23 = __builtin_shufflevector(a[2], a[3], 0, 1, 4, 5) + __builtin_shufflevector(a[2], a[3], 2, 3, 6, 7);
  const f32v y = __builtin_shufflevector(x01, x23, 0, 2, 4, 6) + __builtin_shufflevector(x01, x23, 1, 3, 5, 7);
  out[0] = y[0], out[1] = y[1], out[2] = y[2], out[3] = y[3];
#endif
}

TFM_SIMD_END
