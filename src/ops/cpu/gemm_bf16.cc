// Matrix products with bfloat16 inputs (float32 ones rounded, or bfloat16 ones) and float32 accumulation: oneDNN's bf16 matmul from the
// avx512 level up, float32 products of rounded inputs below it.
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "ops/cpu/dnnl_engine.h"
#include "ops/cpu/isa.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/signal_shield.h"

namespace tfm::cpu {

namespace {
using dnnl::memory;
using dt = memory::data_type;

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

// oneDNN 2.6 has bf16 products from AVX-512 on (emulated there without AVX-512 BF16): whether this
// level allows them and oneDNN makes one (a DNNL_MAX_CPU_ISA set by hand could forbid them).
bool onednn_bf16() {
  static const bool works = [] {
    if (isa() < Isa::kAvx512) return false;
    try {
      product_for(1, 1, 1, false, false, 1.0f, 0.0f);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return works;
}

// An input's entry i (elements `stride` apart) as float32 values of bfloat16 precision: rounded from
// float32 ones, or widened from bfloat16 ones (exact).
void rounded_values(Bf16Input x, int64_t i, int64_t stride, int64_t n, std::vector<float>& out) {
  out.resize(static_cast<size_t>(n));
  if (x.bf16) from_bf16(n, static_cast<const uint16_t*>(x.data) + i * stride, out.data());
  else round_to_bf16(n, static_cast<const float*>(x.data) + i * stride, out.data());
}

// An input's entry i as bfloat16 bits: its own memory, or `scratch` holding float32 values rounded.
const uint16_t* bf16_values(Bf16Input x, int64_t i, int64_t stride, int64_t n, std::vector<uint16_t>& scratch) {
  if (x.bf16) return static_cast<const uint16_t*>(x.data) + i * stride;
  scratch.resize(static_cast<size_t>(n));
  to_bf16(n, static_cast<const float*>(x.data) + i * stride, scratch.data());
  return scratch.data();
}

// Below AVX-512: both inputs as float32 values of bfloat16 precision, then a float32 product. Each
// product of two bfloat16 values (8 significant bits each) is exact in float32, so this is the
// same definition, float32 sums included; it costs the rounding on top of a float32 product.
void rounded_float32(int64_t batch, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, Bf16Input a,
                     int64_t stride_a, Bf16Input b, int64_t stride_b, float beta, float* c, int64_t stride_c) {
  thread_local std::vector<float> a_rounded, b_rounded;
  for (int64_t i = 0; i < batch; ++i) {
    rounded_values(a, i, stride_a, m * k, a_rounded);
    if (i == 0 || stride_b != 0) rounded_values(b, i, stride_b, k * n, b_rounded);  // 0: one B for all
    gemm<float>(1, ta, tb, m, n, k, alpha, a_rounded.data(), 0, b_rounded.data(), 0, beta, c + i * stride_c, 0);
  }
}
}  // namespace

bool bf16_native() { return isa() >= Isa::kAvx512Bf16 && onednn_bf16(); }

const char* bf16_path() {
  if (bf16_native()) return "native: oneDNN's bf16 matmul on bfloat16 instructions (AVX-512 BF16 or AMX)";
  if (onednn_bf16())
    return "emulated by oneDNN's bf16 matmul (no AVX-512 BF16 at this level): slower than float32 products";
  return "float32 products of inputs rounded to bfloat16 (no oneDNN bf16 products below AVX-512): slower than "
         "float32 products";
}

void gemm_bf16(int64_t batch, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, Bf16Input a,
               int64_t stride_a, Bf16Input b, int64_t stride_b, float beta, float* c, int64_t stride_c) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (!onednn_bf16())
    return rounded_float32(batch, ta, tb, m, n, k, alpha, a, stride_a, b, stride_b, beta, c, stride_c);
  if (k == 0) {  // an empty sum: C = beta · C
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t j = 0; j < m * n; ++j) c[i * stride_c + j] = beta == 0.0f ? 0.0f : beta * c[i * stride_c + j];
    return;
  }
  try {
    const Product p = product_for(m, n, k, ta, tb, alpha, beta);
    // This thread's bf16 copies of the inputs and the primitive's scratchpad, grown as needed.
    thread_local std::vector<uint16_t> a_scratch, b_scratch;
    thread_local std::vector<char> scratch;
    if (scratch.size() < p.scratchpad.get_size()) scratch.resize(p.scratchpad.get_size());
    const SignalShield shield;  // around oneDNN's kernels (ops/cpu/signal_shield.h)
    for (int64_t i = 0; i < batch; ++i) {
      // oneDNN's memory objects take non-const pointers; the product only reads its inputs.
      auto* a16 = const_cast<uint16_t*>(bf16_values(a, i, stride_a, m * k, a_scratch));
      auto* b16 = const_cast<uint16_t*>(bf16_values(b, i, stride_b, k * n, b_scratch));
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p.a, dnnl_engine(), a16)},
                                           {DNNL_ARG_WEIGHTS, memory(p.b, dnnl_engine(), b16)},
                                           {DNNL_ARG_DST, memory(p.c, dnnl_engine(), c + i * stride_c)}};
      if (p.scratchpad.get_size() > 0)
        args.emplace(DNNL_ARG_SCRATCHPAD, memory(p.scratchpad, dnnl_engine(), scratch.data()));
      p.product.execute(dnnl_stream(), args);
      dnnl_stream().wait();
    }
  } catch (const dnnl::error& e) {
    throw Error(cat("bfloat16 matrix product ", m, " × ", n, " × ", k, " failed (oneDNN: ", e.what(), ")"));
  }
}

}  // namespace tfm::cpu
