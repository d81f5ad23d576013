#pragma once
// The dropout mask rule shared by every kernel that drops: element g (a global flat index) is kept
// when uniform(g) ≥ p, and kept values are scaled by 1 / (1 − p). One Philox block serves four
// consecutive indices.
#include <algorithm>
#include <array>
#include <cstdint>

#include "core/rng.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

// out[i] = in[i] · keep(base + i) / (1 − p) for i < n. out may alias in.
template <class T>
inline void apply_dropout(int64_t n, uint64_t base, const T* in, double p, const RngStream& rng, T* out) {
  const T keep_scale = static_cast<T>(1.0 / (1.0 - p));
  const float threshold = static_cast<float>(p);
  int64_t i = 0;
  // Element by element up to a block boundary, then 64 at a time (16 blocks), then the rest.
  while (i < n && (base + static_cast<uint64_t>(i)) % 4 != 0) {
    const uint64_t g = base + static_cast<uint64_t>(i);
    out[i] = rng.uniform(g) >= threshold ? in[i] * keep_scale : T(0);
    ++i;
  }
  constexpr int64_t kWide = 4 * RngStream::kBlocks;
  alignas(64) float u[kWide];
  for (; i + kWide <= n; i += kWide) {
    rng.uniform_blocks((base + static_cast<uint64_t>(i)) / 4, u);
#pragma omp simd
    for (int64_t j = 0; j < kWide; ++j) out[i + j] = u[j] >= threshold ? in[i + j] * keep_scale : T(0);
  }
  while (i < n) {
    const uint64_t g = base + static_cast<uint64_t>(i);
    const std::array<float, 4> u = rng.uniform4(g / 4);
    for (uint64_t j = g % 4; j < 4 && i < n; ++j, ++i) out[i] = u[j] >= threshold ? in[i] * keep_scale : T(0);
  }
}

TFM_SIMD_END
