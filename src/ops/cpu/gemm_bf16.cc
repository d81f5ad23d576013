// Matrix products with bfloat16 inputs and float32 accumulation, through oneDNN's matmul.
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "ops/cpu/dnnl_engine.h"
#include "ops/cpu/kernels.h"

namespace tfm::cpu {

namespace {
using dnnl::memory;
using dt = memory::data_type;

// bfloat16 is the upper half of a float32: 8 exponent bits, 7 mantissa bits. Rounded to nearest,
// ties to even; NaN stays a (quiet) NaN, ±∞ and values that round past the largest finite bf16 become ±∞.
inline uint16_t bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// bf16_bits on 16 floats at once (the compiler does not vectorize the scalar form). Compiled
// where the build targets AVX-512 (-march=native, TFM_NATIVE, the default, on such a CPU). The zero-masked
// forms of the shift and the narrowing avoid GCC 12's false -Wmaybe-uninitialized on the plain ones.
#if defined(__AVX512F__)
inline __m256i bf16_bits16(__m512i u) {
  constexpr __mmask16 kAll = 0xffff;
  const __m512i high = _mm512_maskz_srli_epi32(kAll, u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_maskz_srli_epi32(kAll, _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  const __m512i quiet = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
  return _mm512_maskz_cvtepi32_epi16(kAll, _mm512_mask_blend_epi32(nan, rounded, quiet));
}
#endif

// y[i] = bf16_bits(x[i]) over [begin, end).
void to_bf16_range(int64_t begin, int64_t end, const float* x, uint16_t* y) {
  int64_t i = begin;
#if defined(__AVX512F__)
  for (; i + 16 <= end; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), bf16_bits16(_mm512_loadu_si512(x + i)));
#endif
  for (; i < end; ++i) y[i] = bf16_bits(x[i]);
}

void to_bf16(int64_t n, const float* x, uint16_t* y) {
  constexpr int64_t kBlock = 1 << 14;
#pragma omp parallel for schedule(static) if (n >= (1 << 16) && !omp_in_parallel())
  for (int64_t b = 0; b < n; b += kBlock) to_bf16_range(b, std::min(n, b + kBlock), x, y);
}

// One primitive per shape, transposition, scaling and thread count (a primitive keeps the thread
// count it was made with): oneDNN's runtime sizes would pick its reference implementation, hundreds
// of times slower. A fixed batch shape needs a dozen; training by tokens meets a few per distinct
// batch shape, so the cache is emptied when it grows past kMaxCached.
struct Product {
  dnnl::matmul product;
  memory::desc a, b, c, scratchpad;
};
using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, float, float, int>;
constexpr size_t kMaxCached = 512;

Product product_for(int64_t m, int64_t n, int64_t k, bool ta, bool tb, float alpha, float beta) {
  static std::mutex mutex;
  static std::map<Key, Product> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const Key key{m, n, k, ta, tb, alpha, beta, omp_get_max_threads()};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kMaxCached) cache.clear();  // callers hold copies (handles) of what they run
  Product p;
  // op(A) [m, k] and op(B) [k, n] as stored, row-major: A is [m, k] or, transposed, [k, m]; likewise B.
  p.a = memory::desc({m, k}, dt::bf16, ta ? memory::dims{1, m} : memory::dims{k, 1});
  p.b = memory::desc({k, n}, dt::bf16, tb ? memory::dims{1, k} : memory::dims{n, 1});
  p.c = memory::desc({m, n}, dt::f32, {n, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {  // C = alpha · op(A) · op(B) + beta · C: the scale applies before the sum
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.c), attr, dnnl_engine());
  p.product = dnnl::matmul(pd);
  p.scratchpad = pd.scratchpad_desc();
  return cache.emplace(key, p).first->second;
}
}  // namespace

bool bf16_supported() {
  // oneDNN 2.6 has bf16 products only from AVX-512 on (emulated there without AVX-512 BF16).
  static const bool supported = [] {
    try {
      product_for(1, 1, 1, false, false, 1.0f, 0.0f);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return supported;
}

bool bf16_native() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
#else
  return false;  // GCC 12 has __builtin_cpu_supports only on x86; oneDNN here has bf16 products only there
#endif
}

void round_to_bf16(int64_t n, const float* x, float* y) {  // y may be x
  constexpr int64_t kBlock = 1 << 12;
#pragma omp parallel for schedule(static) if (n >= (1 << 16) && !omp_in_parallel())
  for (int64_t b = 0; b < n; b += kBlock) {
    uint16_t bits[kBlock];
    const int64_t size = std::min(kBlock, n - b);
    to_bf16_range(0, size, x + b, bits);
    for (int64_t i = 0; i < size; ++i) {
      const uint32_t u = static_cast<uint32_t>(bits[i]) << 16;
      std::memcpy(&y[b + i], &u, sizeof u);
    }
  }
}

void gemm_bf16(int64_t batch, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t stride_a, const float* b, int64_t stride_b, float beta, float* c, int64_t stride_c) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (k == 0) {  // an empty sum: C = beta · C
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t j = 0; j < m * n; ++j) c[i * stride_c + j] = beta == 0.0f ? 0.0f : beta * c[i * stride_c + j];
    return;
  }
  try {
    const Product p = product_for(m, n, k, ta, tb, alpha, beta);
    // This thread's bf16 copies of the inputs and the primitive's scratchpad, grown as needed.
    thread_local std::vector<uint16_t> a16, b16;
    thread_local std::vector<char> scratch;
    a16.resize(static_cast<size_t>(m * k));
    b16.resize(static_cast<size_t>(k * n));
    if (scratch.size() < p.scratchpad.get_size()) scratch.resize(p.scratchpad.get_size());
    for (int64_t i = 0; i < batch; ++i) {
      to_bf16(m * k, a + i * stride_a, a16.data());
      to_bf16(k * n, b + i * stride_b, b16.data());
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p.a, dnnl_engine(), a16.data())},
                                           {DNNL_ARG_WEIGHTS, memory(p.b, dnnl_engine(), b16.data())},
                                           {DNNL_ARG_DST, memory(p.c, dnnl_engine(), c + i * stride_c)}};
      if (p.scratchpad.get_size() > 0)
        args.emplace(DNNL_ARG_SCRATCHPAD, memory(p.scratchpad, dnnl_engine(), scratch.data()));
      p.product.execute(dnnl_stream(), args);
      dnnl_stream().wait();
    }
  } catch (const dnnl::error& e) {
    throw Error(cat("bfloat16 matrix product ", m, " × ", n, " × ", k, " failed (oneDNN: ", e.what(), ")",
                    bf16_supported() ? "" : "; this CPU has no AVX-512, which oneDNN's bfloat16 products need"));
  }
}

}  // namespace tfm::cpu
