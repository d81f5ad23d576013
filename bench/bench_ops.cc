// Op-level micro-benchmarks at Transformer-base shapes (Vaswani et al., 2017): D = 512, H = 8, d_k = 64,
// FFN 2048, a batch of 64 sentences of 32 tokens (N = 2048 rows), a vocabulary of 8000; float32.
// Compute-bound ops report GFLOP/s (2·M·N·K per product), memory-bound ops GB/s of the minimum traffic
// (each tensor the op must read or write, counted once). Results are recorded in docs/performance.md.
// Threads: OMP_NUM_THREADS when set, else 2 (`make bench` sets 2). This file also holds the benchmark
// binary's main(), shared with bench_model.cc.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/tensor.h"
#include "core/threads.h"
#include "ops/attention.h"
#include "ops/cpu/isa.h"
#include "ops/cpu/kernels.h"
#include "ops/int8.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/softmax.h"
#include "ops/top_k.h"

namespace {

using tfm::Shape;
using tfm::Tensor;

constexpr int64_t kBatch = 64, kLen = 32, kRows = kBatch * kLen;  // 64 sentences × 32 tokens
constexpr int64_t kModel = 512, kHeads = 8, kHeadDim = 64, kFfn = 2048, kVocab = 8000;

// Uniform values in [-1, 1) from a fixed xorshift stream: cheap to make (set-up runs on every
// benchmark invocation) and reproducible; the values do not matter to the timing.
Tensor uniform(Shape shape, uint64_t seed) {
  Tensor t = Tensor::empty(shape);
  float* p = t.data<float>();
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    p[i] = static_cast<float>(s >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }
  return t;
}

// Per-iteration amounts turned into rates over the real (wall-clock) time of all iterations.
void set_gflops(benchmark::State& state, double flops) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
void set_gbytes(benchmark::State& state, double bytes) {
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- The ceiling: a large square product, C = A · B, through ops::matmul (which hands float products
// of 512 rows or more to oneDNN, src/ops/cpu/gemm.cc) and through OpenBLAS's cblas_sgemm directly.

void BM_MatmulSquare(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor a = uniform({n, n}, 1), b = uniform({n, n}, 2), c = Tensor::zeros({n, n});
  for (auto _ : state) {
    tfm::ops::matmul(a, b, c);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * n * n * n);
}
BENCHMARK(BM_MatmulSquare)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_OpenBlasSquare(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Tensor a = uniform({n, n}, 1), b = uniform({n, n}, 2), c = Tensor::zeros({n, n});
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data<float>(), n, b.data<float>(), n,
                0.0f, c.data<float>(), n);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * n * n * n);
}
BENCHMARK(BM_OpenBlasSquare)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

// The other ceiling: reading memory, a sum over 256 MB on every thread. Decoding streams the
// weights from memory at every step (41–165 MB for base), and on these shared machines the memory
// bandwidth varies on its own (19.5 GB/s in most runs, 5–6.5 in docs/performance.md's run O) while
// the in-cache product peak above does not: `make bench` prints it beside the peak.
void BM_MemoryRead(benchmark::State& state) {
  const int64_t n = int64_t{64} << 20;
  const Tensor a = uniform({n}, 3);
  const float* p = a.data<float>();
  for (auto _ : state) {
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += p[i];
    benchmark::DoNotOptimize(sum);
  }
  set_gbytes(state, 4.0 * static_cast<double>(n));
}
BENCHMARK(BM_MemoryRead)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- Decoding's products: few rows (64 hypotheses for greedy search of 64 sentences, 256 for beam 4)
// against a whole weight matrix. What ops::matmul does now (OpenBLAS below 512 rows, which packs the
// weights again on every call) against oneDNN's matmul primitive with the weights reordered once
// into its blocked layout (runtime row count, so that one packed copy serves every step): the
// measurement behind "pre-packed weights" in docs/performance.md. Args: rows, in, out (as
// BM_LinearForward, which times the ops::matmul side under the name BM_DecodeProduct).
void BM_LinearForward(benchmark::State& state);

void BM_DecodeProductPacked(benchmark::State& state) {
  using dnnl::memory;
  using dt = memory::data_type;
  const int64_t M = state.range(0), K = state.range(1), N = state.range(2);
  const Tensor x = uniform({M, K}, 1), w = uniform({N, K}, 2), y = Tensor::zeros({M, N});
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc src({DNNL_RUNTIME_DIM_VAL, K}, dt::f32, {K, 1});
  const memory::desc dst({DNNL_RUNTIME_DIM_VAL, N}, dt::f32, {N, 1});
  const memory::desc any_weights({K, N}, dt::f32, memory::format_tag::any);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, any_weights, dst), engine);
  memory user(memory::desc({K, N}, dt::f32, memory::format_tag::ba), engine, w.data<float>());  // W [N, K] = Wᵀ
  memory packed(pd.weights_desc(), engine);
  dnnl::reorder(user, packed).execute(stream, user, packed);
  const dnnl::matmul product(pd);
  memory xm(memory::desc({M, K}, dt::f32, memory::format_tag::ab), engine, x.data<float>());
  memory ym(memory::desc({M, N}, dt::f32, memory::format_tag::ab), engine, y.data<float>());
  for (auto _ : state) {
    product.execute(stream, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_DST, ym}});
    stream.wait();
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * M * N * K);
}
// The project's own product over weights packed once into 16-column panels (ops/cpu/simd/panel_gemm.cc),
// the one `translate` uses at the AVX2 level (ops/cpu/packed.cc).
void BM_DecodeProductPanels(benchmark::State& state) {
  const int64_t M = state.range(0), K = state.range(1), N = state.range(2);
  const Tensor x = uniform({M, K}, 1), w = uniform({N, K}, 2), y = Tensor::zeros({M, N});
  std::vector<float> panels(static_cast<size_t>(tfm::cpu::panel_floats(N, K)));
  tfm::cpu::pack_panels(N, K, w.data<float>(), panels.data());
  for (auto _ : state) {
    tfm::cpu::matmul_panels(M, N, K, x.data<float>(), panels.data(), nullptr, tfm::ops::Activation::kNone,
                            y.data<float>());
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * M * N * K);
}
// The same with the activation in the same pass (gelu, as BERT's and MiniLM's feed-forward layers):
// MiniLM's shape (8,192 rows, 384 → 1,536), with bias; GFLOP/s count the product alone.
void BM_PanelsGelu(benchmark::State& state) {
  const int64_t M = state.range(0), K = state.range(1), N = state.range(2);
  const Tensor x = uniform({M, K}, 1), w = uniform({N, K}, 2), bias = uniform({N}, 3), y = Tensor::zeros({M, N});
  std::vector<float> panels(static_cast<size_t>(tfm::cpu::panel_floats(N, K)));
  tfm::cpu::pack_panels(N, K, w.data<float>(), panels.data());
  const auto act = state.range(3) ? tfm::ops::Activation::kGelu : tfm::ops::Activation::kNone;
  for (auto _ : state) {
    tfm::cpu::matmul_panels(M, N, K, x.data<float>(), panels.data(), bias.data<float>(), act, y.data<float>());
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * M * N * K);
}
BENCHMARK(BM_PanelsGelu)->ArgNames({"rows", "in", "out", "gelu"})->Args({8192, 384, 1536, 0})->Args({8192, 384, 1536, 1})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();
// The same with the weights cold, as in decoding, where a step's weights (154 MB for the base model's
// decoder and output projection in float32) pass through the caches once per step: the product
// cycles over copies of the weight that together exceed the last-level cache (64 MB or more).
void BM_DecodeProductPanelsCold(benchmark::State& state) {
  const int64_t M = state.range(0), K = state.range(1), N = state.range(2);
  const Tensor x = uniform({M, K}, 1), w = uniform({N, K}, 2), y = Tensor::zeros({M, N});
  const int64_t floats = tfm::cpu::panel_floats(N, K);
  const int64_t copies = std::max<int64_t>(2, (int64_t{64} << 20) / (4 * floats) + 1);
  std::vector<float> panels(static_cast<size_t>(floats * copies));
  for (int64_t c = 0; c < copies; ++c) tfm::cpu::pack_panels(N, K, w.data<float>(), panels.data() + c * floats);
  int64_t next = 0;
  for (auto _ : state) {
    tfm::cpu::matmul_panels(M, N, K, x.data<float>(), panels.data() + next * floats, nullptr,
                            tfm::ops::Activation::kNone, y.data<float>());
    next = (next + 1) % copies;
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * M * N * K);
}
// The int8 product `translate --int8` runs (ops/int8.h): the weight quantized once, x quantized per
// row at each call, the integer products, dequantized with the bias. GOP/s counts the products' 2·M·N·K.
// BM_DecodeProductInt8OneDnn: the same without the project's own panels (ops/cpu/int8.cc), oneDNN's
// u8 × s8 gemm at every shape.
void decode_product_int8(benchmark::State& state, bool panels) {
  const int64_t M = state.range(0), K = state.range(1), N = state.range(2);
  const Tensor x = uniform({M, K}, 1), w = uniform({N, K}, 2), bias = uniform({N}, 3), y = Tensor::zeros({M, N});
  tfm::ops::QuantizedMatrix q = tfm::ops::quantize_rows(w);
  if (!panels) q.panels = nullptr;
  for (auto _ : state) {
    tfm::ops::matmul_int8(x, q, y, bias);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * M * N * K);
}
void BM_DecodeProductInt8(benchmark::State& state) { decode_product_int8(state, true); }
void BM_DecodeProductInt8OneDnn(benchmark::State& state) { decode_product_int8(state, false); }
void decode_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "in", "out"});
  for (int64_t rows : {64, 256})
    for (auto [out, in] : {std::pair{512, 512}, {1536, 512}, {2048, 512}, {512, 2048}, {32000, 512}})
      b->Args({rows, in, out});
  b->Args({1664, 512, 512})->Args({1664, 512, 2048})->Args({1664, 2048, 512});  // the encoder's
  // A MiniLM-shaped encoder's (d 384, 256 sentences of 32 tokens; tools/bench_family_ct2.py).
  b->Args({8192, 384, 1152})->Args({8192, 384, 384})->Args({8192, 384, 1536})->Args({8192, 1536, 384});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_LinearForward)->Name("BM_DecodeProduct")->Apply(decode_shapes);
BENCHMARK(BM_DecodeProductPacked)->Apply(decode_shapes);
BENCHMARK(BM_DecodeProductPanels)->Apply(decode_shapes);
BENCHMARK(BM_DecodeProductPanelsCold)->Apply(decode_shapes);
BENCHMARK(BM_DecodeProductInt8)->Apply(decode_shapes);
BENCHMARK(BM_DecodeProductInt8OneDnn)->Apply(decode_shapes);

// ---- Linear layers, weights stored [out, in] (PyTorch's layout): y = x · Wᵀ.
// Args: rows, in, out.

void BM_LinearForward(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const Tensor x = uniform({m, k}, 3), w = uniform({n, k}, 4), y = Tensor::zeros({m, n});
  for (auto _ : state) {
    tfm::ops::matmul(x, w, y, {.trans_b = true});
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * m * n * k);
}

// dx += dy · W and dW += dyᵀ · x: two products of the forward's size.
void BM_LinearBackward(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const Tensor x = uniform({m, k}, 3), w = uniform({n, k}, 4), dy = uniform({m, n}, 5);
  const Tensor dx = Tensor::zeros({m, k}), dw = Tensor::zeros({n, k});
  for (auto _ : state) {
    tfm::ops::matmul_backward(x, w, dy, &dx, &dw, {.trans_b = true});
    benchmark::ClobberMemory();
  }
  set_gflops(state, 4.0 * m * n * k);
}

// Q/K/V/output projections, FFN up and down, the pre-softmax projection onto the vocabulary.
void linear_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "in", "out"});
  b->Args({kRows, kModel, kModel});
  b->Args({kRows, kModel, kFfn});
  b->Args({kRows, kFfn, kModel});
  b->Args({kRows, kModel, kVocab});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_LinearForward)->Apply(linear_shapes);
BENCHMARK(BM_LinearBackward)->Apply(linear_shapes);

// The forward through OpenBLAS directly, for the comparison with oneDNN at the model's shapes.
void BM_OpenBlasLinearForward(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1)),
            n = static_cast<int>(state.range(2));
  const Tensor x = uniform({m, k}, 3), w = uniform({n, k}, 4), y = Tensor::zeros({m, n});
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x.data<float>(), k, w.data<float>(), k,
                0.0f, y.data<float>(), n);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * m * n * k);
}
BENCHMARK(BM_OpenBlasLinearForward)->Apply(linear_shapes);

// ---- Attention: B = 64, T = S = 32, H = 8, d_k = 64, self-attention. Flops counted for the four
// products (Q·Kᵀ and P·V forward, 4·B·H·T·S·d_k; twice that backward), the same with the causal mask:
// the kernel computes the full T×S scores and masks them afterwards.

struct AttentionData {
  Tensor q = uniform({kBatch, kLen, kModel}, 6), k = uniform({kBatch, kLen, kModel}, 7),
         v = uniform({kBatch, kLen, kModel}, 8);
  Tensor probs = Tensor::zeros({kBatch, kHeads, kLen, kLen}), out = Tensor::zeros({kBatch, kLen, kModel});
  tfm::ops::AttentionArgs args;
  explicit AttentionData(bool causal) {
    args.heads = kHeads;
    args.causal = causal;
    // As in training, the batch carries its key lengths; here every sentence is full (no padding).
    args.key_lengths = Tensor::from<int32_t>({kBatch}, std::vector<int32_t>(kBatch, kLen));
  }
};
constexpr double kAttentionFlops = 4.0 * kBatch * kHeads * kLen * kLen * kHeadDim;

void BM_AttentionForward(benchmark::State& state) {
  AttentionData d(state.range(0) != 0);
  for (auto _ : state) {
    tfm::ops::attention(d.q, d.k, d.v, d.args, d.probs, d.out);
    benchmark::ClobberMemory();
  }
  set_gflops(state, kAttentionFlops);
}

void BM_AttentionBackward(benchmark::State& state) {
  AttentionData d(state.range(0) != 0);
  tfm::ops::attention(d.q, d.k, d.v, d.args, d.probs, d.out);  // the saved probabilities
  const Tensor dout = uniform({kBatch, kLen, kModel}, 9);
  const Tensor dq = Tensor::zeros(d.q.shape()), dk = Tensor::zeros(d.k.shape()), dv = Tensor::zeros(d.v.shape());
  for (auto _ : state) {
    tfm::ops::attention_backward(d.q, d.k, d.v, d.args, d.probs, dout, dq, dk, dv);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2 * kAttentionFlops);
}
BENCHMARK(BM_AttentionForward)->ArgName("causal")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AttentionBackward)->ArgName("causal")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- One decoding step's attention, beam 4 over 64 sentences (256 queries, H = 8, d_k = 64):
// self-attention over a decoding cache of 16 positions in slabs [16, 256, D], each hypothesis
// reading its own row of every slab (key_rows; no prefix shared, the most memory a step can read)
// (kv_group 1), and encoder-decoder attention over 25 source positions shared by a sentence's 4
// beams (kv_group 4). Memory-bound: GB/s counts the keys and values read once per query entry
// (shared ones once per sentence).

void BM_DecodeAttention(benchmark::State& state) {
  const int64_t group = state.range(0), keys = group == 1 ? 16 : 25, queries = 4 * kBatch, entries = queries / group;
  const bool slabs = group == 1;
  const Tensor q = uniform({queries, 1, kModel}, 6),
               k = slabs ? uniform({keys, queries, kModel}, 7) : uniform({entries, keys, kModel}, 7),
               v = slabs ? uniform({keys, queries, kModel}, 8) : uniform({entries, keys, kModel}, 8);
  const Tensor probs = Tensor::zeros({queries, kHeads, 1, keys}), out = Tensor::zeros({queries, 1, kModel});
  tfm::ops::AttentionArgs args;
  args.heads = kHeads;
  args.kv_group = group;
  args.key_lengths = Tensor::from<int32_t>({queries}, std::vector<int32_t>(queries, static_cast<int32_t>(keys)));
  if (slabs) {
    std::vector<int32_t> rows(static_cast<size_t>(queries * keys));
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i / static_cast<size_t>(keys));
    args.key_rows = Tensor::from<int32_t>({queries, keys}, rows);
  }
  for (auto _ : state) {
    tfm::ops::attention(q, k, v, args, probs, out);
    benchmark::ClobberMemory();
  }
  set_gbytes(state, 4.0 * (2 * entries * keys * kModel + 2 * queries * kModel));
}
BENCHMARK(BM_DecodeAttention)->ArgName("kv_group")->Arg(1)->Arg(4)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- A decoding step's selection (ops::top_k_logprobs): each row's best 2K continuations and its
// log-sum-exp over a vocabulary of 32,000, for 64 rows (greedy, k 1) and 256 (beam 4, k 8).
// GB/s counts the logits read once.

void BM_TopK(benchmark::State& state) {
  const int64_t rows = state.range(0), k = rows == 64 ? 1 : 8, V = 32000;
  const Tensor logits = uniform({rows, V}, 9);
  Tensor logp = Tensor::empty({rows, k}, tfm::DType::F64), ids = Tensor::empty({rows, k}, tfm::DType::I32),
         lse = Tensor::empty({rows}, tfm::DType::F64);
  for (auto _ : state) {
    tfm::ops::top_k_logprobs(logits, k, {0, 1, 2}, logp, ids, lse);
    benchmark::ClobberMemory();
  }
  set_gbytes(state, 4.0 * rows * V);
}
BENCHMARK(BM_TopK)->ArgName("rows")->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- Layer norm on [2048, 512].

void BM_LayerNormForward(benchmark::State& state) {
  const Tensor x = uniform({kRows, kModel}, 10), gamma = uniform({kModel}, 11), beta = uniform({kModel}, 12);
  const Tensor y = Tensor::zeros(x.shape()), mean = Tensor::zeros({kRows}), rstd = Tensor::zeros({kRows});
  for (auto _ : state) {
    tfm::ops::layer_norm(x, gamma, beta, 1e-6, y, mean, rstd);
    benchmark::ClobberMemory();
  }
  // Reads x, gamma, beta; writes y, mean, rstd.
  set_gbytes(state, 4.0 * (2 * kRows * kModel + 2 * kModel + 2 * kRows));
}

void BM_LayerNormBackward(benchmark::State& state) {
  const Tensor x = uniform({kRows, kModel}, 10), gamma = uniform({kModel}, 11), beta = uniform({kModel}, 12);
  const Tensor y = Tensor::zeros(x.shape()), mean = Tensor::zeros({kRows}), rstd = Tensor::zeros({kRows});
  tfm::ops::layer_norm(x, gamma, beta, 1e-6, y, mean, rstd);
  const Tensor dy = uniform(x.shape(), 13), dx = Tensor::zeros(x.shape());
  const Tensor dgamma = Tensor::zeros({kModel}), dbeta = Tensor::zeros({kModel});
  for (auto _ : state) {
    tfm::ops::layer_norm_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
    benchmark::ClobberMemory();
  }
  // Reads dy, x, gamma, mean, rstd; reads and writes dx, dgamma, dbeta (they accumulate).
  set_gbytes(state, 4.0 * (4 * kRows * kModel + 5 * kModel + 2 * kRows));
}
BENCHMARK(BM_LayerNormForward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LayerNormBackward)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- Softmax over the last dim: attention scores [B·H·T, S] = [16384, 32] and vocabulary logits
// [2048, 8000]. Args: rows, cols.

void BM_SoftmaxForward(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const Tensor x = uniform({rows, cols}, 14), y = Tensor::zeros({rows, cols});
  for (auto _ : state) {
    tfm::ops::softmax(x, y);
    benchmark::ClobberMemory();
  }
  set_gbytes(state, 4.0 * 2 * rows * cols);  // reads x, writes y
}

void BM_SoftmaxBackward(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const Tensor x = uniform({rows, cols}, 14), y = Tensor::zeros({rows, cols});
  tfm::ops::softmax(x, y);
  const Tensor dy = uniform({rows, cols}, 15), dx = Tensor::zeros({rows, cols});
  for (auto _ : state) {
    tfm::ops::softmax_backward(y, dy, dx);
    benchmark::ClobberMemory();
  }
  set_gbytes(state, 4.0 * 4 * rows * cols);  // reads y, dy; reads and writes dx
}

void softmax_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "cols"});
  b->Args({kBatch * kHeads * kLen, kLen});
  b->Args({kRows, kVocab});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_SoftmaxForward)->Apply(softmax_shapes);
BENCHMARK(BM_SoftmaxBackward)->Apply(softmax_shapes);

// ---- Label-smoothed cross-entropy (ε = 0.1) on [2048, 8000] logits, no padding rows.

struct LossData {
  Tensor logits = uniform({kRows, kVocab}, 16), dlogits = Tensor::zeros({kRows, kVocab});
  Tensor targets = Tensor::empty({kRows}, tfm::DType::I32), lse = Tensor::zeros({kRows});
  tfm::ops::LossArgs args{.smoothing = 0.1, .ignore_index = -1};
  LossData() {
    for (int64_t r = 0; r < kRows; ++r) targets.data<int32_t>()[r] = static_cast<int32_t>((r * 7919) % kVocab);
  }
};
constexpr double kLogitBytes = 4.0 * kRows * kVocab;

void BM_CrossEntropyForward(benchmark::State& state) {
  LossData d;
  for (auto _ : state) benchmark::DoNotOptimize(tfm::ops::cross_entropy(d.logits, d.targets, d.args, d.lse));
  set_gbytes(state, kLogitBytes);  // reads the logits
}

void BM_CrossEntropyBackward(benchmark::State& state) {
  LossData d;
  tfm::ops::cross_entropy(d.logits, d.targets, d.args, d.lse);
  for (auto _ : state) {
    tfm::ops::cross_entropy_backward(d.logits, d.targets, d.lse, d.args, 1.0 / kRows, d.dlogits);
    benchmark::ClobberMemory();
  }
  set_gbytes(state, 3 * kLogitBytes);  // reads the logits; reads and writes dlogits
}

// What a training step runs: the forward (loss and lse), then the gradient.
void BM_CrossEntropyForwardBackward(benchmark::State& state) {
  LossData d;
  for (auto _ : state) {
    const tfm::ops::LossSum s = tfm::ops::cross_entropy(d.logits, d.targets, d.args, d.lse);
    tfm::ops::cross_entropy_backward(d.logits, d.targets, d.lse, d.args, 1.0 / s.tokens, d.dlogits);
    benchmark::ClobberMemory();
  }
  set_gbytes(state, 4 * kLogitBytes);
}
BENCHMARK(BM_CrossEntropyForward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CrossEntropyBackward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CrossEntropyForwardBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  tfm::keep_freed_memory_for_reuse();  // as the transformer program does
  const char* env = std::getenv("OMP_NUM_THREADS");
  const int threads = env && std::atoi(env) > 0 ? std::atoi(env) : 2;
  tfm::set_num_threads(threads);  // OpenMP kernels and OpenBLAS share this pool
  // The level first (TFM_CPU_ISA caps oneDNN only before its first use: some benchmarks make their
  // own oneDNN engine), as the transformer program does.
  benchmark::AddCustomContext("cpu_level", tfm::cpu::name(tfm::cpu::isa()));
  benchmark::AddCustomContext("tfm_threads", std::to_string(tfm::num_threads()));
  benchmark::AddCustomContext("openblas", openblas_get_config());
  const dnnl_version_t* dnnl = dnnl_version();
  benchmark::AddCustomContext("onednn", std::to_string(dnnl->major) + "." + std::to_string(dnnl->minor) + "." +
                                            std::to_string(dnnl->patch) +
                                            (dnnl->cpu_runtime == DNNL_RUNTIME_OMP ? " OpenMP" : ""));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
