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
// Rows go in blocks whose part of x, copied into groups of 6 rows stored k-major (pack_rows: the
// tile's broadcasts then read one stream, not 6 rows a row's width apart), stays in L2; per panel,
// the k loop is cut into blocks of kDepth so that a block of the panel (16 KB) stays in L1 while
// every row of the block passes over it; between blocks of k the tile goes through y (float32 kept
// as is, so the sum is the same as in one pass).
//
// Each output is Σ_i x[r, i]·w[c, i] summed in the order i = 0, 1, …, k − 1 by fused multiply-adds,
// then the bias added and ReLU taken, whatever the thread count, the row count or the tile a row
// falls in: the same bits from 1 or 2 threads, from a batch of 64 rows or any subset of them, and
// from every build. The other activations follow in each build's own activate_run, which may
// differ between builds in the last bits, over each panel's block of rows while it is in L1.
// Threads take contiguous ranges of panels (few rows) or of rows (many), so each writes its own
// part of y.
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
#include <vector>

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
inline void tile(int64_t i0, int64_t i1, const float* x, const float* panel, float* y, int64_t ldy,
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
      const __m256 a = _mm256_broadcast_ss(x + i * R + r);
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
      for (int64_t i = i0; i < i1; ++i) s = std::fma(x[i * R + r], panel[i * kPanel + j], s);
      if (last) {
        if (bias16) s += bias16[j];
        if (relu) s = s > 0.0f ? s : 0.0f;
      }
      y[r * ldy + j] = s;
    }
#endif
}

// Rows [0, m) of x, packed by pack_rows, against panel p, k rows [i0, i1).
void panel_rows(int64_t m, int64_t i0, int64_t i1, const float* xp, int64_t k, const float* panel, float* y,
                int64_t ldy, int64_t cols, bool first, bool last, const float* bias16, bool relu) {
  const int64_t whole = m / kTile * kTile;
  for (int64_t r = 0; r < whole; r += kTile) {
    // The first tile brings the next block of the panel into L1 as it goes.
    if (r == 0) tile<kTile, true>(i0, i1, xp, panel, y, ldy, cols, first, last, bias16, relu);
    else tile<kTile>(i0, i1, xp + r * k, panel, y + r * ldy, ldy, cols, first, last, bias16, relu);
  }
  const float* xr = xp + whole * k;
  float* yr = y + whole * ldy;
  switch (m - whole) {
    case 5: tile<5>(i0, i1, xr, panel, yr, ldy, cols, first, last, bias16, relu); break;
    case 4: tile<4>(i0, i1, xr, panel, yr, ldy, cols, first, last, bias16, relu); break;
    case 3: tile<3>(i0, i1, xr, panel, yr, ldy, cols, first, last, bias16, relu); break;
    case 2: tile<2>(i0, i1, xr, panel, yr, ldy, cols, first, last, bias16, relu); break;
    case 1: tile<1>(i0, i1, xr, panel, yr, ldy, cols, first, last, bias16, relu); break;
    default: break;
  }
}

// x [m, k] into groups of kTile rows (the last group may be shorter, R rows), each stored k-major:
// xp[g·k + i·R + r] = x[g + r, i] for the group starting at row g, so a tile's broadcasts read one
// stream.
template <int R>
void pack_group(int64_t k, const float* x, float* out) {
  int64_t i = 0;
#if defined(TFM_SIMD_AVX2) || defined(TFM_SIMD_AVX512)
  if constexpr (R == kTile) {
    // 8 columns at a time: the 6 rows as an 8 × 8 transpose (rows 6 and 7 zero), each column stored
    // whole in column order, so that its 2 values past the 6 are overwritten by the next column (the
    // last column's, by the next 8 columns, the rest of the row or the next group; pack_rows' buffer
    // has 8 floats to spare at its end). AMD's masked stores are microcoded: plain ones instead.
    for (; i + 8 <= k; i += 8) {
      const __m256 zero = _mm256_setzero_ps();
      const __m256 t0 = _mm256_unpacklo_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(x + k + i));
      const __m256 t1 = _mm256_unpackhi_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(x + k + i));
      const __m256 t2 = _mm256_unpacklo_ps(_mm256_loadu_ps(x + 2 * k + i), _mm256_loadu_ps(x + 3 * k + i));
      const __m256 t3 = _mm256_unpackhi_ps(_mm256_loadu_ps(x + 2 * k + i), _mm256_loadu_ps(x + 3 * k + i));
      const __m256 t4 = _mm256_unpacklo_ps(_mm256_loadu_ps(x + 4 * k + i), _mm256_loadu_ps(x + 5 * k + i));
      const __m256 t5 = _mm256_unpackhi_ps(_mm256_loadu_ps(x + 4 * k + i), _mm256_loadu_ps(x + 5 * k + i));
      const __m256 s[8] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                           _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE),
                           _mm256_shuffle_ps(t4, zero, 0x44), _mm256_shuffle_ps(t4, zero, 0xEE),
                           _mm256_shuffle_ps(t5, zero, 0x44), _mm256_shuffle_ps(t5, zero, 0xEE)};
      float* o = out + i * R;
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j)  // column j: s[j mod 4]'s lower (j < 4) or upper half, with s[j mod 4 + 4]'s
        _mm256_storeu_ps(o + j * R, _mm256_permute2f128_ps(s[j % 4], s[j % 4 + 4], j < 4 ? 0x20 : 0x31));
    }
  }
#endif
  for (; i < k; ++i)
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) out[i * R + r] = x[r * k + i];
}
void pack_rows(int64_t m, int64_t k, const float* x, float* xp) {
  int64_t g = 0;
  for (; g + kTile <= m; g += kTile) pack_group<kTile>(k, x + g * k, xp + g * k);
  switch (m - g) {
    case 5: return pack_group<5>(k, x + g * k, xp + g * k);
    case 4: return pack_group<4>(k, x + g * k, xp + g * k);
    case 3: return pack_group<3>(k, x + g * k, xp + g * k);
    case 2: return pack_group<2>(k, x + g * k, xp + g * k);
    case 1: return pack_group<1>(k, x + g * k, xp + g * k);
    default: return;
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

namespace {
// At least this many rows: the threads split the rows (see matmul_panels).
constexpr int64_t kSplitRows = 512;

struct Product {
  int64_t m, n, k;
  const float* x;
  const float* panels;
  const float* bias;
  ops::Activation act;
  float* y;
};

// Rows [m0, m1) of y against panels [p0, p1). Rows in blocks whose part of x, packed by pack_rows
// into this thread's buffer, stays in L2 (kRowBytes) while the panels pass: per panel, every block of
// k against every row of the block, so the tile's part of y stays in L1 between blocks of k. The
// activations other than ReLU follow per panel, over the block's rows, while they are in L1 (after
// the whole product they would come back from memory: 50 MB for 8,192 rows × 1,536).
void product_part(const Product& q, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
  if (m1 <= m0 || p1 <= p0) return;
  const int64_t n = q.n, k = q.k;
  const bool relu = q.act == ops::Activation::kRelu, after = !relu && q.act != ops::Activation::kNone;
  const int64_t block_rows = std::max<int64_t>(kTile, kRowBytes / (4 * std::max<int64_t>(k, 1)) / kTile * kTile);
  thread_local std::vector<float> packed;  // this thread's block of x, packed
  packed.resize(static_cast<size_t>(std::min(block_rows, m1 - m0) * k + 8));  // 8 to spare: pack_group
  for (int64_t r0 = m0; r0 < m1; r0 += block_rows) {
    const int64_t rows = std::min(block_rows, m1 - r0);
    pack_rows(rows, k, q.x + r0 * k, packed.data());
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c0 = p * kPanel, cols = std::min(kPanel, n - c0);
      float bias16[kPanel] = {};
      if (q.bias) std::memcpy(bias16, q.bias + c0, static_cast<size_t>(cols) * sizeof(float));
      for (int64_t i0 = 0; i0 < std::max<int64_t>(k, 1); i0 += kDepth) {
        const int64_t i1 = std::min(k, i0 + kDepth);
        panel_rows(rows, i0, i1, packed.data(), k, q.panels + p * k * kPanel, q.y + r0 * n + c0, n, cols, i0 == 0,
                   i1 >= k, q.bias ? bias16 : nullptr, relu);
      }
      if (after)  // the panel's columns of the block, just written: in L1
        for (int64_t r = r0; r < r0 + rows; ++r) activate_run(q.act, cols, q.y + r * n + c0, q.y + r * n + c0);
    }
  }
}
}  // namespace

void matmul_panels(int64_t m, int64_t n, int64_t k, const float* x, const float* panels, const float* bias,
                   ops::Activation act, float* y) {
  if (m == 0 || n == 0) return;
  const Product q{m, n, k, x, panels, bias, act, y};
  const int64_t count = (n + kPanel - 1) / kPanel;
  const bool parallel = !omp_in_parallel() && m * n * k >= (1 << 18);
  // Many rows (an encoder's batch): each thread takes a contiguous range of whole tiles of rows and
  // every panel, packing only its own rows (the panels come from the shared cache). Few rows (a
  // decoding step's): each thread takes a contiguous range of panels and every row, so that each
  // weight comes from memory once. Either way each output is the same sum in the same order.
#pragma omp parallel if (parallel)
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    if (m >= kSplitRows) {
      const int64_t tiles = (m + kTile - 1) / kTile;
      product_part(q, std::min(m, tiles * t / threads * kTile), std::min(m, tiles * (t + 1) / threads * kTile), 0,
                   count);
    } else {
      product_part(q, 0, m, count * t / threads, count * (t + 1) / threads);
    }
  }
}

TFM_SIMD_END
