// Rounding float32 to bfloat16 (the inputs of gemm_bf16, ops::round_to_bf16, ops::to_bf16) and back.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

namespace {
// Bf16::from_float (core/dtype.h: round to nearest even, NaN kept quiet) on a vector of the build's
// width at once: GCC's vector types (target.h's TFM_SIMD_BYTES).
constexpr int kLanes = TFM_SIMD_BYTES / 4;
using u32v = uint32_t __attribute__((vector_size(TFM_SIMD_BYTES)));
using u16v = uint16_t __attribute__((vector_size(TFM_SIMD_BYTES / 2)));
inline u16v bf16_bitsv(u32v u) {
  const u32v high = u >> 16;
  const u32v rounded = (u + 0x7fffu + (high & 1u)) >> 16;
  const auto nan = (u & 0x7fffffffu) > 0x7f800000u;  // all ones where u is a NaN
  return __builtin_convertvector(nan ? (high | 0x40u) : rounded, u16v);
}

// y[i] = x[i]'s bfloat16 bits over [begin, end).
void to_bf16_range(int64_t begin, int64_t end, const float* x, uint16_t* y) {
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    u32v u;
    std::memcpy(&u, x + i, sizeof u);
    const u16v r = bf16_bitsv(u);
    std::memcpy(y + i, &r, sizeof r);
  }
  for (; i < end; ++i) y[i] = Bf16::from_float(x[i]).bits;
}
}  // namespace

void to_bf16(int64_t n, const float* x, uint16_t* y) {
  constexpr int64_t kBlock = 1 << 14;
#pragma omp parallel for schedule(static) if (n >= (1 << 16) && !omp_in_parallel())
  for (int64_t b = 0; b < n; b += kBlock) to_bf16_range(b, std::min(n, b + kBlock), x, y);
}

void round_to_bf16(int64_t n, const float* x, float* y) {  // y may be x
  constexpr int64_t kBlock = 1 << 12;
#pragma omp parallel for schedule(static) if (n >= (1 << 16) && !omp_in_parallel())
  for (int64_t b = 0; b < n; b += kBlock) {
    uint16_t bits[kBlock];
    const int64_t size = std::min(kBlock, n - b);
    to_bf16_range(0, size, x + b, bits);
    for (int64_t i = 0; i < size; ++i) y[b + i] = Bf16{bits[i]}.to_float();
  }
}

void from_bf16(int64_t n, const uint16_t* x16, float* y) {
  constexpr int64_t kBlock = 1 << 14;
#pragma omp parallel for schedule(static) if (n >= (1 << 16) && !omp_in_parallel())
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t end = std::min(n, b + kBlock);
    for (int64_t i = b; i < end; ++i) y[i] = Bf16{x16[i]}.to_float();
  }
}

TFM_SIMD_END
