// The project's own float32 product over a weight packed once: y [m, n] = act(x [m, k] · wᵀ + bias)
// with w [n, k] reordered into panels of kPanel = 16 output columns (ops/cpu/packed.cc chooses it
// where BLAS and oneDNN have nothing as fast: the AVX2 level, where OpenBLAS repacks the weight on
// every call, a quarter of its time on a decoding step's 64 rows, and oneDNN 2.6's packed products
// have no brgemm kernel; measured in docs/performance.md).
//
// Layout: panel p holds columns [16p, 16p + 16) as k rows of 16 floats (panels[(p·k + i)·16 + j] =
// w[16p + j, i]; columns past n are zeros). A tile of up to 6 rows × 16 columns lives in 12 vector
// registers (two of 8 floats per row) while k runs; each step loads the panel's 16 floats once and
// broadcasts one float of each row of x: 12 fused multiply-adds for 2 loads and 6 broadcasts.
// Rows go in blocks whose part of x stays in L2; per panel, the k loop is cut into blocks of kDepth
// so that a block of the panel (16 KB) stays in L1 while every row of the block passes over it;
// between blocks of k the tile goes through y (float32 kept as is, so the sum is the same as in
// one pass).
//
// Each output is Σ_i x[r, i]·w[c, i] summed in the order i = 0, 1, …, k − 1 by fused multiply-adds,
// then the bias added and ReLU taken, whatever the thread count, the row count or the tile a row
// falls in: the same bits from 1 or 2 threads, from a batch of 64 rows or any subset of them, and
// from every build. The other activations follow in each build's own activate_run, which may
// differ between builds in the last bits. Threads take contiguous ranges of
// panels, so each writes its own columns.
//
// The AVX2 and AVX-512 builds run the AVX2 tile (the AVX-512 level uses oneDNN's packed products
// instead, which are faster there); the generic build runs the same arithmetic one column at a
// time with std::fma, for the tests of every build and for CPUs without AVX2.
#if defined(TFM_SIMD_AVX2) || defined(TFM_SIMD_AVX512)
#include <immintrin.h>
#endif
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/activation.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

namespace {
constexpr int64_t kPanel = 16;   // output columns per panel (two 8-float vectors)
constexpr int64_t kTile = 6;     // rows per tile (12 accumulators + 2 panel loads + 1 broadcast ≤ 16 registers)
constexpr int64_t kDepth = 256;  // k per block: 256 × 16 floats = 16 KB of the panel
constexpr int64_t kRowBytes = 256 << 10;  // x's rows per block: 256 KB of them (L2 is 512 KB to 2 MB)

// y tile [rows, 16] (rows ldy apart, only `cols` ≤ 16 columns stored) op= x [rows, i0 : i1] · panel
// rows [i0, i1): starting from zero when first, else from what y holds; with the bias (16 values,
// zero past cols) and ReLU added when last.
template <int R, bool kPrefetch = false>
inline void tile(int64_t i0, int64_t i1, const float* x, int64_t ldx, const float* panel, float* y, int64_t ldy,
                 int64_t cols, bool first, bool last, const float* bias16, bool relu) {
#if defined(TFM_SIMD_AVX2) || defined(TFM_SIMD_AVX512)
  __m256 lo[R], hi[R];
  float spill[R][kPanel];  // a partial last panel goes through here
  const bool whole = cols == kPanel;
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    if (first) {
      lo[r] = _mm256_setzero_ps();
      hi[r] = _mm256_setzero_ps();
    } else if (whole) {
      lo[r] = _mm256_loadu_ps(y + r * ldy);
      hi[r] = _mm256_loadu_ps(y + r * ldy + 8);
    } else {
      std::memset(spill[r], 0, sizeof spill[r]);
      std::memcpy(spill[r], y + r * ldy, static_cast<size_t>(cols) * sizeof(float));
      lo[r] = _mm256_loadu_ps(spill[r]);
      hi[r] = _mm256_loadu_ps(spill[r] + 8);
    }
  }
  const float* b = panel + i0 * kPanel;
  for (int64_t i = i0; i < i1; ++i, b += kPanel) {
    if constexpr (kPrefetch) _mm_prefetch(reinterpret_cast<const char*>(b + kDepth * kPanel), _MM_HINT_T0);
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(x + r * ldx + i);
      lo[r] = _mm256_fmadd_ps(a, b0, lo[r]);
      hi[r] = _mm256_fmadd_ps(a, b1, hi[r]);
    }
  }
  if (last) {
    const __m256 zero = _mm256_setzero_ps();
    if (bias16) {  // only then: adding +0 would turn a sum of −0 into +0
      const __m256 bias_lo = _mm256_loadu_ps(bias16), bias_hi = _mm256_loadu_ps(bias16 + 8);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        lo[r] = _mm256_add_ps(lo[r], bias_lo);
        hi[r] = _mm256_add_ps(hi[r], bias_hi);
      }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      if (relu) {  // x > 0 ? x : 0, as ops::relu (a NaN gives 0: maxps returns its second operand)
        lo[r] = _mm256_max_ps(lo[r], zero);
        hi[r] = _mm256_max_ps(hi[r], zero);
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    if (whole) {
      _mm256_storeu_ps(y + r * ldy, lo[r]);
      _mm256_storeu_ps(y + r * ldy + 8, hi[r]);
    } else {
      _mm256_storeu_ps(spill[r], lo[r]);
      _mm256_storeu_ps(spill[r] + 8, hi[r]);
      std::memcpy(y + r * ldy, spill[r], static_cast<size_t>(cols) * sizeof(float));
    }
  }
#else
  for (int r = 0; r < R; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float s = first ? 0.0f : y[r * ldy + j];
      for (int64_t i = i0; i < i1; ++i) s = std::fma(x[r * ldx + i], panel[i * kPanel + j], s);
      if (last) {
        if (bias16) s += bias16[j];
        if (relu) s = s > 0.0f ? s : 0.0f;
      }
      y[r * ldy + j] = s;
    }
#endif
}

template <int R>
void tiles_of(int64_t m, int64_t r0, int64_t i0, int64_t i1, const float* x, int64_t k, const float* panel, float* y,
              int64_t ldy, int64_t cols, bool first, bool last, const float* bias16, bool relu) {
  for (int64_t r = r0; r + R <= m; r += R)
    tile<R>(i0, i1, x + r * k, k, panel, y + r * ldy, ldy, cols, first, last, bias16, relu);
}

// Rows [0, m) against panel p, k rows [i0, i1).
void panel_rows(int64_t m, int64_t i0, int64_t i1, const float* x, int64_t k, const float* panel, float* y,
                int64_t ldy, int64_t cols, bool first, bool last, const float* bias16, bool relu) {
  const int64_t whole = m / kTile * kTile;
  int64_t r0 = 0;
  if (whole > 0) {  // the first tile brings the next block of the panels into L1 as it goes
    tile<kTile, true>(i0, i1, x, k, panel, y, ldy, cols, first, last, bias16, relu);
    r0 = kTile;
  }
  tiles_of<kTile>(whole, r0, i0, i1, x, k, panel, y, ldy, cols, first, last, bias16, relu);
  const float* xr = x + whole * k;
  float* yr = y + whole * ldy;
  switch (m - whole) {
    case 5: tile<5>(i0, i1, xr, k, panel, yr, ldy, cols, first, last, bias16, relu); break;
    case 4: tile<4>(i0, i1, xr, k, panel, yr, ldy, cols, first, last, bias16, relu); break;
    case 3: tile<3>(i0, i1, xr, k, panel, yr, ldy, cols, first, last, bias16, relu); break;
    case 2: tile<2>(i0, i1, xr, k, panel, yr, ldy, cols, first, last, bias16, relu); break;
    case 1: tile<1>(i0, i1, xr, k, panel, yr, ldy, cols, first, last, bias16, relu); break;
    default: break;
  }
}
}  // namespace

int64_t panel_floats(int64_t n, int64_t k) { return (n + kPanel - 1) / kPanel * kPanel * k; }

void pack_panels(int64_t n, int64_t k, const float* w, float* panels) {
  const int64_t count = (n + kPanel - 1) / kPanel;
#pragma omp parallel for schedule(static) if (n * k >= (1 << 16))
  for (int64_t p = 0; p < count; ++p) {
    float* out = panels + p * k * kPanel;
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < kPanel; ++j) {
        const int64_t c = p * kPanel + j;
        out[i * kPanel + j] = c < n ? w[c * k + i] : 0.0f;
      }
  }
}

void matmul_panels(int64_t m, int64_t n, int64_t k, const float* x, const float* panels, const float* bias,
                   ops::Activation act, float* y) {
  if (m == 0 || n == 0) return;
  const int64_t count = (n + kPanel - 1) / kPanel;
  const bool relu = act == ops::Activation::kRelu, after = !relu && act != ops::Activation::kNone;
  // The panels in contiguous ranges, one per thread. Rows in blocks whose part of x stays in L2
  // (kRowBytes) while the thread's panels pass: per panel, every block of k against every row of the
  // block, so the tile's part of y stays in L1 between blocks of k.
  const int64_t block_rows = std::max<int64_t>(kTile, kRowBytes / (4 * std::max<int64_t>(k, 1)) / kTile * kTile);
  const bool parallel = !omp_in_parallel() && m * n * k >= (1 << 18);
#pragma omp parallel if (parallel)
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t p0 = count * t / threads, p1 = count * (t + 1) / threads;
    for (int64_t r0 = 0; r0 < m; r0 += block_rows) {
      const int64_t rows = std::min(block_rows, m - r0);
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t c0 = p * kPanel, cols = std::min(kPanel, n - c0);
        float bias16[kPanel] = {};
        if (bias) std::memcpy(bias16, bias + c0, static_cast<size_t>(cols) * sizeof(float));
        for (int64_t i0 = 0; i0 < std::max<int64_t>(k, 1); i0 += kDepth) {
          const int64_t i1 = std::min(k, i0 + kDepth);
          panel_rows(rows, i0, i1, x + r0 * k, k, panels + p * k * kPanel, y + r0 * n + c0, n, cols, i0 == 0,
                     i1 >= k, bias ? bias16 : nullptr, relu);
        }
      }
    }
    // The other activations over this thread's columns, row by row while they are in the cache.
    if (after && p1 > p0) {
      const int64_t c0 = p0 * kPanel, c1 = std::min(n, p1 * kPanel);
      for (int64_t r = 0; r < m; ++r) activate_run(act, c1 - c0, y + r * n + c0, y + r * n + c0);
    }
  }
}

TFM_SIMD_END
