#include <oneapi/dnnl/dnnl.hpp>

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
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

// One block of output columns [c0, c0 + n) with its own product.
struct Block {
  int64_t c0 = 0, n = 0;
  dnnl::matmul product;
  memory weights;  // in the layout the primitive chose
  memory bias;     // [1, n] over the caller's bias; empty when there is none
  memory::desc scratchpad;  // what one execution needs (often nothing), given by the caller
};

// The project's own panels (simd/panel_gemm.cc), 64-byte aligned: one panel row is a cache line.
struct Panels {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data;
  const float* bias = nullptr;  // the caller's, kept alive by ops::PackedMatrix
  ops::Activation act = ops::Activation::kNone;
};

struct Packed {
  int64_t n = 0, k = 0;
  bool bf16 = false;          // the blocks take x rounded to bfloat16 (their weights are bfloat16)
  std::vector<Block> blocks;  // oneDNN's: one, or one per thread for wide outputs; or empty, and
  Panels panels;              // the project's own
};

// Wide outputs (the output projection, 32,000 columns) in one block per thread, each computed by
// its thread alone (oneDNN runs a primitive on the calling thread inside a parallel region): 64 ×
// 32,000 × 512 took 11.2–13.1 ms against 12.4–14.3 whole, 256 rows 41–45 against 48–49 ms. For
// 512 and 2,048 columns the blocks gained nothing consistent (docs/performance.md).
constexpr int64_t kBlockedColumns = 8192;

// Where the project's own panels serve: the AVX2 level (where this build has the AVX2 SIMD build;
// a compiler that builds generic alone keeps BLAS), but for wide outputs. At 64 rows, 2 threads,
// GFLOP/s, panels against OpenBLAS (sgemm, which repacks the weight at every call): 512 → 512 219
// / 176, 512 → 1536 222 / 180, 512 → 2048 214 / 180, 2048 → 512 212 / 178; 256 rows 204–223 /
// 194–208; the encoder's 1,664 rows 198–212 / 204–211 (oneDNN's sgemm there). The wide output
// projection (32,000 columns) ran as fast or faster through oneDNN's blocks, per thread: 64 rows
// 175–191 against 143–174 without the panels' prefetch and 183–185 with it, 256 rows 194–201
// against 132–180 and 191–198 (AMD EPYC Zen 4 forced to the avx2 level,
// docs/performance.md). From the avx512 level on, oneDNN's brgemm kernels are faster still.
bool panels_serve(int64_t n) {
  return simd_build(isa()) == SimdBuild::kAvx2 && isa() < Isa::kAvx512 && n < kBlockedColumns;
}

// The activation as oneDNN's eltwise post-op, applied to the result (after the bias) in the same
// pass: eltwise_swish is x·σ(α·x), so α = 1 for swish and 1.702 for gelu_sigmoid; eltwise_gelu_tanh
// is gelu_tanh's definition.
void append_activation(ops::Activation act, dnnl::post_ops& post) {
  using dnnl::algorithm;
  switch (act) {
    case ops::Activation::kNone: return;
    case ops::Activation::kRelu: return post.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    case ops::Activation::kSwish: return post.append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
    case ops::Activation::kGelu: return post.append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    case ops::Activation::kGeluSigmoid: return post.append_eltwise(1.0f, algorithm::eltwise_swish, 1.702f, 0.0f);
    case ops::Activation::kGeluTanh: return post.append_eltwise(1.0f, algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
  }
}

// w16: with bf16, w already rounded to bfloat16 (the same [n, k] layout), else null.
Block pack_block(int64_t c0, int64_t n, int64_t k, int64_t ldy, const float* w, const uint16_t* w16, const float* bias,
                 ops::Activation act) {
  Block b;
  b.c0 = c0;
  b.n = n;
  // y [M, n] (rows ldy apart) = x [M, K] · B [K, n] (+ bias [1, n]) with B = w[c0 : c0 + n]ᵀ; M is
  // given at each call.
  const dt in = w16 ? dt::bf16 : dt::f32;
  const memory::desc src({DNNL_RUNTIME_DIM_VAL, k}, in, {k, 1});
  const memory::desc dst({DNNL_RUNTIME_DIM_VAL, n}, dt::f32, {ldy, 1});
  const memory::desc any_weights({k, n}, in, memory::format_tag::any);
  const memory::desc bias_desc({1, n}, dt::f32, {n, 1});
  // The scratchpad in the caller's hands: with the library's, a primitive may run only on the
  // thread that created it, and each block's (and, with translate's parallel batches, each
  // product's) runs on other threads, several at a time.
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (act != ops::Activation::kNone) {
    dnnl::post_ops post;
    append_activation(act, post);
    attr.set_post_ops(post);
  }
  const dnnl::matmul::primitive_desc pd(bias ? dnnl::matmul::desc(src, any_weights, bias_desc, dst)
                                             : dnnl::matmul::desc(src, any_weights, dst),
                                        attr, dnnl_engine());
  b.scratchpad = pd.scratchpad_desc();
  if (bias) b.bias = memory(bias_desc, dnnl_engine(), const_cast<float*>(bias + c0));
  // w [n, k] row-major is B [k, n] in layout "ba" (bf16: the rounded copy, moved as it is).
  memory user = w16 ? memory(memory::desc({k, n}, dt::bf16, memory::format_tag::ba), dnnl_engine(),
                             const_cast<uint16_t*>(w16 + c0 * k))
                    : memory(memory::desc({k, n}, dt::f32, memory::format_tag::ba), dnnl_engine(),
                             const_cast<float*>(w + c0 * k));
  b.weights = memory(pd.weights_desc(), dnnl_engine());
  {
    const SignalShield shield;  // every oneDNN kernel runs shielded (ops/cpu/signal_shield.h)
    dnnl::reorder(user, b.weights).execute(dnnl_stream(), user, b.weights);
    dnnl_stream().wait();
  }
  b.product = dnnl::matmul(pd);
  return b;
}

// x: float32 [m, k], or with `bf16` the same rounded to bfloat16.
void run_block(const Block& b, int64_t m, int64_t k, int64_t ldy, const void* x, bool bf16, float* y) {
  memory xm(memory::desc({m, k}, bf16 ? dt::bf16 : dt::f32, {k, 1}), dnnl_engine(), const_cast<void*>(x));
  memory ym(memory::desc({m, b.n}, dt::f32, {ldy, 1}), dnnl_engine(), y + b.c0);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, b.weights}, {DNNL_ARG_DST, ym}};
  if (b.bias) args.emplace(DNNL_ARG_BIAS, b.bias);
  if (const size_t bytes = b.scratchpad.get_size()) {
    thread_local std::vector<char> scratch;  // this thread's, for every block it runs
    if (scratch.size() < bytes) scratch.resize(bytes);
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(b.scratchpad, dnnl_engine(), scratch.data()));
  }
  b.product.execute(dnnl_stream(), args);
  dnnl_stream().wait();
}
}  // namespace

std::shared_ptr<const void> pack_weight(int64_t n, int64_t k, const float* w, const float* bias,
                                        ops::Activation act, bool bf16) {
  TFM_CHECK(!bf16 || bf16_native(), "bf16 packed weights need bfloat16 instructions (AVX-512 BF16 or AMX): ",
            bf16_path());
  try {
    auto p = std::make_shared<Packed>();
    p->n = n;
    p->k = k;
    p->bf16 = bf16;
    std::vector<uint16_t> w16;
    if (bf16) {
      w16.resize(static_cast<size_t>(n * k));
      to_bf16(n * k, w, w16.data());
    }
    if (!bf16 && panels_serve(n)) {
      const size_t bytes = (static_cast<size_t>(panel_floats(n, k)) * sizeof(float) + 63) / 64 * 64;
      p->panels.data.reset(static_cast<float*>(std::aligned_alloc(64, std::max<size_t>(bytes, 64))));
      TFM_CHECK(p->panels.data != nullptr, "packing a [", n, ", ", k, "] weight matrix: out of memory (", bytes,
                " bytes)");
      pack_panels(n, k, w, p->panels.data.get());
      p->panels.bias = bias;
      p->panels.act = act;
      return p;
    }
    const int64_t blocks = n >= kBlockedColumns ? std::max(1, omp_get_max_threads()) : 1;
    for (int64_t i = 0; i < blocks; ++i) {
      const int64_t c0 = n * i / blocks, c1 = n * (i + 1) / blocks;
      p->blocks.push_back(pack_block(c0, c1 - c0, k, n, w, bf16 ? w16.data() : nullptr, bias, act));
    }
    return p;
  } catch (const dnnl::error& e) {
    throw Error(cat("packing a [", n, ", ", k, "] weight matrix failed (oneDNN: ", e.what(), ")"));
  }
}

void matmul_packed(const void* packed, int64_t m, const float* x, float* y) {
  const Packed& p = *static_cast<const Packed*>(packed);
  if (m == 0) return;
  if (p.panels.data) return matmul_panels(m, p.n, p.k, x, p.panels.data.get(), p.panels.bias, p.panels.act, y);
  const int64_t blocks = static_cast<int64_t>(p.blocks.size());
  const void* in = x;
  if (p.bf16) {  // x rounded once for every block, in this thread's buffer
    thread_local std::vector<uint16_t> x16;
    x16.resize(static_cast<size_t>(m * p.k));
    to_bf16(m * p.k, x, x16.data());
    in = x16.data();
  }
  // One block: its product runs on every thread (inside a parallel region, as in translate's
  // parallel batches, oneDNN runs it on the calling thread alone).
  const SignalShield shield;  // its "gemm:jit" kernels point the stack pointer at the heap
  std::string failure;
  if (blocks == 1) {
    try {
      run_block(p.blocks[0], m, p.k, p.n, in, p.bf16, y);
    } catch (const dnnl::error& e) {
      failure = e.what();
    }
  } else {
    // An exception may not leave a parallel region: the first one's message is kept and thrown after.
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < blocks; ++i) {
      try {
        run_block(p.blocks[i], m, p.k, p.n, in, p.bf16, y);
      } catch (const dnnl::error& e) {
#pragma omp critical(packed_failure)
        if (failure.empty()) failure = e.what();
      }
    }
  }
  TFM_CHECK(failure.empty(), "packed matrix product of ", m, " rows failed (oneDNN: ", failure, ")");
}

// BM_DecodeProduct against BM_DecodeProductPacked (2 threads): packed 1.3–1.9× at 64 rows for every
// shape in two runs; at 256 rows the two runs disagreed. Whole beam-4 translations of 64
// sentences (256 rows), alternated 8 times each (BM_Translate/beam4 and
// beam4_shortlist3200): packed at 256 rows faster in 14 of 16 pairs, median 1.20×
// (docs/performance.md). The encoder's products (64 sentences of 25 tokens: 1,600 rows),
// medians of 3: 512 → 512 233 against 204 GFLOP/s, 2048 → 512 204 against 190, 512 → 2048 209
// against 226 (without the bias, which the packed product adds in the same pass and sgemm's path
// in a pass of its own over the 13 MB of output); the encoder of 640 sentences (10 batches) took
// 3.46–4.19 s packed against 3.70–4.71 s, faster in 3 of 4 alternated pairs. So every product is
// packed but the wide output projection beyond 256 rows (512 × 512 → 32,000: 177 against 202).
// Those runs were on AVX-512 CPUs. Without AVX-512, oneDNN 2.6 has no brgemm matmul, and its
// packed products fall back to kernels slower than OpenBLAS's: forced to the avx2 level on an AMD
// EPYC (Zen 4), packed against BLAS in GFLOP/s, 1 thread, 64 rows: 512 → 512 67 / 98, 512 → 2048
// 52 / 96, 2048 → 512 66 / 97, but 512 → 32,000 (blocked per thread) 97 / 73; 256 rows: 73 / 108,
// 53 / 109, 72 / 109, 101 / 99; 2 threads, 64 rows: 135 / 162, 100 / 180, 135 / 186, 193 / 140
// (docs/performance.md, "Every CPU family"). There only the wide projection is packed.
// At the AVX2 level the project's own panels serve the rest (panels_serve).
bool packing_pays(int64_t n, int64_t) { return panels_serve(n) || isa() >= Isa::kAvx512 || n >= kBlockedColumns; }
const char* packed_path() {
  if (isa() >= Isa::kAvx512) return "weights packed once into oneDNN's matmul primitives";
  if (panels_serve(0))
    return "weights packed once into the project's own 16-column panels (AVX2); outputs of 8192 columns and more "
           "into oneDNN's matmul primitives";
  return "outputs of 8192 columns and more packed into oneDNN's matmul primitives; the others through BLAS";
}
bool packed_product_wins(int64_t m, int64_t n, int64_t k) {
  if (!packing_pays(n, k)) return false;
  return m <= 256 || n < kBlockedColumns;
}

}  // namespace tfm::cpu
