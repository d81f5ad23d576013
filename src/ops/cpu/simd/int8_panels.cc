// The project's own int8 product over a weight packed once (ops/int8.h, chosen by ops/cpu/int8.cc
// where oneDNN's u8 × s8 products have no VNNI and its gemm packs the weight again on every call):
// acc [m, nc] = (xq [m, k] − offset) · w[c0 : c0 + nc]ᵀ in int32, with xq the activations quantized
// to unsigned bytes (v + offset, v in [−L, L]) and w [n, k] the weight's signed bytes. Integer sums:
// the result is exact, the same numbers oneDNN gives, whatever the order.
//
// Layout (k a multiple of 4): first comp, int32 [P · 16] with comp[c] = offset · Σ_i w[c, i] (zero
// past n), then, from a 64-byte boundary, panel p of columns [16p, 16p + 16) as k / 4 groups of 64
// bytes: group q holds w[16p + j, 4q + t] at byte 4j + t (j < 8) and 32 + 4(j − 8) + t (j ≥ 8).
//
// A tile of up to 6 rows × 16 columns lives in 12 vector registers of eight int32 sums while k runs;
// each group of 4 k broadcasts 4 bytes of each row of xq and multiplies them with the group's two
// vectors: vpmaddubsw (u8 × s8, adjacent pairs summed into 16 bits) then vpmaddwd by ones (the
// two pairs of a column summed into 32 bits), then added. The 16-bit pair sums cannot saturate:
// xq ≤ 2L + 1 = 127 where this product serves (L = 63), |w| ≤ 127, and 2 · 127 · 127 = 32,258 <
// 32,767. Rows go over each panel in tiles; per panel the k loop is cut into blocks of kDepth
// groups (16 KB of the panel, kept in L1 while every tile passes), the sums kept in acc between
// blocks.
//
// The AVX2 and AVX-512 builds run the AVX2 tile; the generic build runs the same sums one column at a
// time, for the tests of every build.
#if defined(TFM_SIMD_AVX2) || defined(TFM_SIMD_AVX512)
#include <immintrin.h>
#endif
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

namespace {
constexpr int64_t kPanel = 16;        // output columns per panel (two vectors of 8 int32)
constexpr int64_t kGroup = 4;         // k per group: the 4 bytes of a column that one int32 lane sums
constexpr int64_t kGroupBytes = 64;   // one group of a panel: 16 columns × 4 bytes, a cache line
constexpr int64_t kTile = 6;          // rows per tile (12 accumulators)
constexpr int64_t kDepth = 256;       // groups per block of k: 256 × 64 bytes = 16 KB of the panel

int64_t panel_count(int64_t n) { return (n + kPanel - 1) / kPanel; }
int64_t comp_bytes(int64_t n) { return (panel_count(n) * kPanel * 4 + 63) / 64 * 64; }

// acc tile [R, cols] (rows ldacc apart) = (or += when not first) x rows [R] groups [g0, g1) · panel
// groups [g0, g1), less comp16 (16 values) when last.
template <int R, bool kPrefetch = false>
inline void tile(int64_t g0, int64_t g1, const uint8_t* x, int64_t ldx, const int8_t* panel, int32_t* acc,
                 int64_t ldacc, int64_t cols, bool first, bool last, const int32_t* comp16) {
#if defined(TFM_SIMD_AVX2) || defined(TFM_SIMD_AVX512)
  __m256i lo[R], hi[R];
  alignas(32) int32_t spill[R][kPanel];  // a partial last panel goes through here
  const bool whole = cols == kPanel;
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    if (first) {
      lo[r] = _mm256_setzero_si256();
      hi[r] = _mm256_setzero_si256();
    } else if (whole) {
      lo[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * ldacc));
      hi[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * ldacc + 8));
    } else {
      std::memset(spill[r], 0, sizeof spill[r]);
      std::memcpy(spill[r], acc + r * ldacc, static_cast<size_t>(cols) * sizeof(int32_t));
      lo[r] = _mm256_load_si256(reinterpret_cast<const __m256i*>(spill[r]));
      hi[r] = _mm256_load_si256(reinterpret_cast<const __m256i*>(spill[r] + 8));
    }
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t* b = panel + g0 * kGroupBytes;
  for (int64_t g = g0; g < g1; ++g, b += kGroupBytes) {
    if constexpr (kPrefetch) _mm_prefetch(reinterpret_cast<const char*>(b + kDepth * kGroupBytes), _MM_HINT_T0);
    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32));
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      int32_t four;
      std::memcpy(&four, x + r * ldx + g * kGroup, sizeof four);
      const __m256i a = _mm256_set1_epi32(four);
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b0), ones));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b1), ones));
    }
  }
  if (last) {
    const __m256i c_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(comp16));
    const __m256i c_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(comp16 + 8));
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      lo[r] = _mm256_sub_epi32(lo[r], c_lo);
      hi[r] = _mm256_sub_epi32(hi[r], c_hi);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    if (whole) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * ldacc), lo[r]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * ldacc + 8), hi[r]);
    } else {
      _mm256_store_si256(reinterpret_cast<__m256i*>(spill[r]), lo[r]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(spill[r] + 8), hi[r]);
      std::memcpy(acc + r * ldacc, spill[r], static_cast<size_t>(cols) * sizeof(int32_t));
    }
  }
#else
  for (int r = 0; r < R; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      // Wrapping 32-bit sums, as the vector lanes add: the result is exact wherever it fits.
      uint32_t s = first ? 0u : static_cast<uint32_t>(acc[r * ldacc + j]);
      const int64_t lane = j < 8 ? 4 * j : 32 + 4 * (j - 8);
      for (int64_t g = g0; g < g1; ++g)
        for (int64_t t = 0; t < kGroup; ++t)
          s += static_cast<uint32_t>(static_cast<int32_t>(x[r * ldx + g * kGroup + t]) * panel[g * kGroupBytes + lane + t]);
      if (last) s -= static_cast<uint32_t>(comp16[j]);
      acc[r * ldacc + j] = static_cast<int32_t>(s);
    }
#endif
}

template <int R>
void tiles_of(int64_t m, int64_t r0, int64_t g0, int64_t g1, const uint8_t* x, int64_t k, const int8_t* panel,
              int32_t* acc, int64_t ldacc, int64_t cols, bool first, bool last, const int32_t* comp16) {
  for (int64_t r = r0; r + R <= m; r += R)
    tile<R>(g0, g1, x + r * k, k, panel, acc + r * ldacc, ldacc, cols, first, last, comp16);
}

// Rows [0, m) against one panel, groups [g0, g1).
void panel_rows(int64_t m, int64_t g0, int64_t g1, const uint8_t* x, int64_t k, const int8_t* panel, int32_t* acc,
                int64_t ldacc, int64_t cols, bool first, bool last, const int32_t* comp16) {
  const int64_t whole = m / kTile * kTile;
  int64_t r0 = 0;
  if (whole > 0) {  // the first tile brings the panel's next block into L1 as it goes
    tile<kTile, true>(g0, g1, x, k, panel, acc, ldacc, cols, first, last, comp16);
    r0 = kTile;
  }
  tiles_of<kTile>(whole, r0, g0, g1, x, k, panel, acc, ldacc, cols, first, last, comp16);
  const uint8_t* xr = x + whole * k;
  int32_t* ar = acc + whole * ldacc;
  switch (m - whole) {
    case 5: tile<5>(g0, g1, xr, k, panel, ar, ldacc, cols, first, last, comp16); break;
    case 4: tile<4>(g0, g1, xr, k, panel, ar, ldacc, cols, first, last, comp16); break;
    case 3: tile<3>(g0, g1, xr, k, panel, ar, ldacc, cols, first, last, comp16); break;
    case 2: tile<2>(g0, g1, xr, k, panel, ar, ldacc, cols, first, last, comp16); break;
    case 1: tile<1>(g0, g1, xr, k, panel, ar, ldacc, cols, first, last, comp16); break;
    default: break;
  }
}
}  // namespace

int64_t int8_panel_bytes(int64_t n, int64_t k) { return comp_bytes(n) + panel_count(n) * (k / kGroup) * kGroupBytes; }

void pack_int8_panels(int64_t n, int64_t k, const int8_t* w, int32_t offset, void* out) {
  auto* comp = static_cast<int32_t*>(out);
  int8_t* panels = static_cast<int8_t*>(out) + comp_bytes(n);
  const int64_t count = panel_count(n), groups = k / kGroup;
#pragma omp parallel for schedule(static) if (n * k >= (1 << 18))
  for (int64_t p = 0; p < count; ++p) {
    int8_t* panel = panels + p * groups * kGroupBytes;
    for (int64_t j = 0; j < kPanel; ++j) {
      const int64_t c = p * kPanel + j, lane = j < 8 ? 4 * j : 32 + 4 * (j - 8);
      int32_t sum = 0;
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t t = 0; t < kGroup; ++t) {
          const int8_t v = c < n ? w[c * k + g * kGroup + t] : 0;
          panel[g * kGroupBytes + lane + t] = v;
          sum += v;
        }
      comp[c] = static_cast<int32_t>(int64_t{offset} * sum);  // fits for any k below 2^31 / (64 · 127)
    }
  }
}

void matmul_int8_panels(int64_t m, int64_t c0, int64_t nc, int64_t k, const uint8_t* xq, const void* packed, int64_t n,
                        int32_t* acc) {
  const auto* comp = static_cast<const int32_t*>(packed);
  const int8_t* panels = static_cast<const int8_t*>(packed) + comp_bytes(n);
  const int64_t groups = k / kGroup;
  for (int64_t p = c0 / kPanel; p * kPanel < c0 + nc; ++p) {
    const int64_t cols = std::min(kPanel, c0 + nc - p * kPanel);
    for (int64_t g0 = 0; g0 < std::max<int64_t>(groups, 1); g0 += kDepth) {
      const int64_t g1 = std::min(groups, g0 + kDepth);
      panel_rows(m, g0, g1, xq, k, panels + p * groups * kGroupBytes, acc + (p * kPanel - c0), nc, cols, g0 == 0,
                 g1 >= groups, comp + p * kPanel);
    }
  }
}

TFM_SIMD_END
