// Whole-model benchmarks: a training step and translation, at the paper's shapes, on random
// tokens and random weights. scripts/bench.sh runs them beside the peers (PyTorch's training step)
// and prints the ratios; docs/performance.md records the figures.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "core/rng.h"
#include "core/threads.h"
#include "decode/search.h"
#include "decode/shortlist.h"
#include "decode/translator.h"
#include "model/checkpoint.h"
#include "model/transformer.h"
#include "ops/adam.h"
#include "ops/cuda/kernels.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "train/batch_loss.h"

namespace tfm {
namespace {

std::vector<std::vector<int32_t>> random_sentences(int64_t n, int64_t len, int64_t vocab, uint64_t seed) {
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(n));
  const RngStream rng{seed, 77};
  uint64_t k = 0;
  for (auto& s : out)
    for (int64_t i = 0; i < len; ++i) s.push_back(4 + static_cast<int32_t>(rng.uniform(k++) * static_cast<float>(vocab - 4)));
  return out;
}

// Model FLOPs, the basis of model FLOP utilization (achieved FLOP/s / the sgemm peak measured in the
// same run, which scripts/bench.sh prints): 2 FLOPs per multiply-add of the matrix products,
// element-wise work not counted. Per token and layer, in FLOPs: attention projections 2·4·D²,
// feed-forward 2·2·D·F; the decoder's encoder-decoder attention adds its Q and output projections
// (2·2·D²) per target token and its K and V projections (2·2·D²) per source token; the output
// projection 2·D·V per target token; attention itself 4·D per query, key and layer (scores and
// weighted sum). Causal self-attention in training counts all T keys, as the kernels compute whole
// tiles; in decoding, the t keys a step sees.
struct FlopCount {
  double D, F, V, Le, Ld;
  explicit FlopCount(const ModelConfig& c)
      : D(static_cast<double>(c.d_model)), F(static_cast<double>(c.d_ff)), V(static_cast<double>(c.vocab_size)),
        Le(static_cast<double>(c.encoder_layers)), Ld(static_cast<double>(c.decoder_layers)) {}
  // Forward FLOPs of the encoder and of the decoder's K/V projections for one source token.
  double source_token() const { return 2 * Le * (4 * D * D + 2 * D * F) + 2 * Ld * 2 * D * D; }
  // Forward FLOPs of the decoder and the output projection for one target token.
  double target_token() const { return 2 * Ld * (6 * D * D + 2 * D * F) + 2 * D * V; }
  // Forward FLOPs of a batch of B sentences of S source and T target positions (padding included).
  double forward(double B, double S, double T) const {
    const double attention = 4 * D * (Le * S * S + Ld * (T * T + T * S));
    return B * (S * source_token() + T * target_token() + attention);
  }
  // Training: forward, then backward at twice the forward's cost.
  double training_step(double B, double S, double T) const { return 3 * forward(B, S, T); }
  // Decoding B sentences of S source positions for T steps with `rows` hypotheses per sentence:
  // the encoder once, then one target token per hypothesis and step, attending to the earlier ones.
  double decoding(double B, double S, double T, double rows) const {
    double steps = 0;
    for (double t = 1; t <= T; ++t) steps += target_token() + 4 * D * Ld * (t + S);
    return B * (S * (source_token() + 4 * D * Le * S) + rows * steps);
  }
};

// A whole optimizer step: forward, label-smoothed loss, backward, Adam.
class TrainingStep {
 public:
  explicit TrainingStep(Transformer& model, ops::Precision products = ops::Precision::kFloat32)
      : model_(model),
        products_(products),
        m_(Tensor::zeros(model.params().values().shape(), DType::F32, model.params().device())),
        v_(Tensor::zeros(model.params().values().shape(), DType::F32, model.params().device())),
        rng_(3) {}
  double run(const Batch& batch) {
    model_.params().zero_grad();
    Context ctx = model_.context(&rng_);
    if (products_ == ops::Precision::kBf16) ctx.use_bf16_activations();  // as train --bf16
    // dL/dlogits scaled by 1 / the step's target tokens, as the trainer does.
    const ops::LossSum loss =
        batch_loss(model_, ctx, batch, 0.1, 1.0 / static_cast<double>(batch.target_tokens), true);
    ops::adam_step(model_.params().values(), model_.params().grads(), m_, v_, {1e-4, 0.9, 0.98, 1e-9, ++step_});
    return loss.loss;
  }

 private:
  Transformer& model_;
  ops::Precision products_;
  Tensor m_, v_;
  Rng rng_;
  int64_t step_ = 0;
};

// One step on 64 sentences of 32 tokens per side, vocabulary 8000, dropout on: the shape of
// ../shared/peers/torch_train_step.py. `products`: kBf16 is `train --bf16` (native with AVX-512 BF16
// or AMX, emulated elsewhere: ops::bf16_path()).
void BM_TrainStep(benchmark::State& state, const char* preset, ops::Precision products) {
  ModelConfig c = model_preset(preset);
  c.vocab_size = 8000;
  Transformer model(c);
  model.init_parameters(1);
  const int64_t B = 64, L = 32;
  // 31 tokens + EOS per side, as the peer's 32 (its target is shifted by one).
  const Batch batch = make_batch(random_sentences(B, L - 1, c.vocab_size, 1), random_sentences(B, L - 1, c.vocab_size, 2), c);
  TrainingStep step(model, products);
  // One untimed step first, as the PyTorch peer takes one: the first step's pages of gradients,
  // Adam moments and activations are new to the process (about 1 GB of page faults for base).
  benchmark::DoNotOptimize(step.run(batch));
  for (auto _ : state) benchmark::DoNotOptimize(step.run(batch));
  const double tokens = static_cast<double>(batch.source_tokens + batch.target_tokens);
  state.counters["tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["params"] = static_cast<double>(model.params().parameter_count());
  const double S = static_cast<double>(batch.src.size(1)), T = static_cast<double>(batch.tgt_in.size(1));
  state.counters["GFLOP/s"] = benchmark::Counter(FlopCount(c).training_step(B, S, T) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// The training step on a CUDA GPU: 500 sentences of 50 tokens per side (25,000 source +
// 25,000 target tokens, EOS included), a shared vocabulary of 37,000, dropout on, as
// bench/torch_gpu_train_step.py times PyTorch on the same GPU. Each step ends with the device idle
// (a read of one weight), so the time is the GPU's. Registered only where a CUDA device is found.
void BM_TrainStepCuda(benchmark::State& state, const char* preset, ops::Precision products) {
  ModelConfig c = model_preset(preset);
  c.vocab_size = 37000;
  Transformer model(c);
  model.init_parameters(1);
  model.params().to_device(Device::CUDA);
  const int64_t B = 500, L = 50;
  const Batch batch = to_device(
      make_batch(random_sentences(B, L - 1, c.vocab_size, 1), random_sentences(B, L - 1, c.vocab_size, 2), c),
      Device::CUDA);
  TrainingStep step(model, products);
  auto run = [&] {
    const double loss = step.run(batch);
    (void)model.params().values().rows(0, 1).to_doubles();  // waits for the step's last kernel
    return loss;
  };
  benchmark::DoNotOptimize(run());  // untimed: the allocator's first blocks, cuBLAS's set-up
  for (auto _ : state) benchmark::DoNotOptimize(run());
  const double tokens = static_cast<double>(batch.source_tokens + batch.target_tokens);
  state.counters["tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsIterationInvariantRate);
  const double flops = FlopCount(c).training_step(static_cast<double>(B), static_cast<double>(L), static_cast<double>(L));
  state.counters["TFLOP/s"] = benchmark::Counter(flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  // Against the H100's dense bf16 peak, 989 TFLOP/s (the basis of MFU).
  state.counters["MFU_bf16_%"] = benchmark::Counter(flops / 989e12 * 100, benchmark::Counter::kIsIterationInvariantRate);
}

// Translation on a CUDA GPU at the base shape (vocabulary 32000, random weights): 128 sentences of
// 25 source tokens into exactly 25 tokens each, greedy and beam 4, float32 or bf16 products.
// `packed`: as the Translator prepares a model on a GPU by default; false: the plain weights
// (--no-packed-weights; with kBf16 rounded at every product), for comparison in the same run.
void BM_TranslateCuda(benchmark::State& state, int64_t beam, ops::Precision products, bool packed) {
  ModelConfig c = model_preset("base");
  c.vocab_size = 32000;
  c.pre_norm = true;
  Transformer model(c);
  model.init_parameters(1);
  model.params().to_device(Device::CUDA);
  // As the Translator prepares a model on a GPU: packed (fused Q, K and V; biases in the epilogues),
  // with kBf16 the weights rounded to bfloat16 once (translate --bf16).
  if (!packed) model.set_inference_products(products);
  else if (products == ops::Precision::kBf16) model.use_bf16_products(Transformer::PlainWeights::kRelease);
  else model.pack_weights(Transformer::PlainWeights::kRelease);
  const auto sources = random_sentences(128, 25, c.vocab_size, 5);
  SearchOptions o;
  o.beam_size = beam;
  o.max_length_a = 0;
  o.max_length_b = 26;
  o.min_length = 26;
  auto translate = [&] {
    int64_t n = 0;
    if (beam == 1) {
      for (const Hypothesis& h : greedy_search(model, sources, o)) n += static_cast<int64_t>(h.tokens.size());
    } else {
      for (const auto& best : beam_search(model, sources, o)) n += static_cast<int64_t>(best[0].tokens.size());
    }
    return n;
  };
  translate();
  int64_t produced = 0;
  for (auto _ : state) produced += translate();
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(produced), benchmark::Counter::kIsRate);
}

// One product on the GPU, C [M, N] = A [M, K] · Bᵀ (B [N, K], a weight) or, with `weight_grad`,
// C [M, N] += Aᵀ · B with A [K, M], B [K, N] (a weight's gradient over K = 25,000 rows): the shapes
// of the base model's step, in float32 or bf16 (inputs rounded on the device each call).
void BM_MatmulCuda(benchmark::State& state, int64_t M, int64_t N, int64_t K, bool weight_grad, ops::Precision p) {
  const Tensor a = Tensor::zeros(weight_grad ? Shape{K, M} : Shape{M, K}, DType::F32, Device::CUDA);
  const Tensor b = Tensor::zeros(weight_grad ? Shape{K, N} : Shape{N, K}, DType::F32, Device::CUDA);
  const Tensor c = Tensor::zeros({M, N}, DType::F32, Device::CUDA);
  a.fill(0.01);
  b.fill(0.02);
  const ops::MatmulArgs args{weight_grad, !weight_grad, 1.0f, weight_grad ? 1.0f : 0.0f, p};
  ops::matmul(a, b, c, args);
  cuda::kernels()->synchronize();
  for (auto _ : state) {
    ops::matmul(a, b, c, args);
    cuda::kernels()->synchronize();
  }
  state.counters["TFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(M * N * K) * 1e-12,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

[[maybe_unused]] const bool cuda_registered = [] {
  if (cuda::kernels() == nullptr) return false;
  const struct {
    const char* name;
    int64_t M, N, K;
    bool weight_grad;
  } products[] = {{"fc1", 25000, 2048, 512, false}, {"fc2", 25000, 512, 2048, false},
                  {"logits", 25000, 37000, 512, false}, {"fc1_weight_grad", 2048, 512, 25000, true}};
  for (const auto& m : products)
    for (const auto& [suffix, precision] :
         {std::pair{"", ops::Precision::kFloat32}, std::pair{"_bf16", ops::Precision::kBf16}})
      benchmark::RegisterBenchmark((std::string("BM_MatmulCuda/") + m.name + suffix).c_str(),
                                   [m, precision](benchmark::State& state) {
                                     BM_MatmulCuda(state, m.M, m.N, m.K, m.weight_grad, precision);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(20);
  for (const char* preset : {"base", "big"})
    for (const auto& [suffix, precision] :
         {std::pair{"", ops::Precision::kFloat32}, std::pair{"_bf16", ops::Precision::kBf16}})
      benchmark::RegisterBenchmark((std::string("BM_TrainStepCuda/") + preset + suffix).c_str(),
                                   [preset, precision](benchmark::State& state) {
                                     BM_TrainStepCuda(state, preset, precision);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(5);
  for (const bool packed : {true, false})
    for (const auto& [suffix, precision] :
         {std::pair{"", ops::Precision::kFloat32}, std::pair{"_bf16", ops::Precision::kBf16}}) {
      const std::string tail = std::string(suffix) + (packed ? "" : "_plain");
      benchmark::RegisterBenchmark(("BM_TranslateCuda/greedy" + tail).c_str(),
                                   [precision, packed](benchmark::State& s) { BM_TranslateCuda(s, 1, precision, packed); })
          ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
      benchmark::RegisterBenchmark(("BM_TranslateCuda/beam4" + tail).c_str(),
                                   [precision, packed](benchmark::State& s) { BM_TranslateCuda(s, 4, precision, packed); })
          ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
    }
  return true;
}();

// Translation at the base shape (6+6 layers, shared embeddings, vocabulary 32000, random weights):
// 64 sentences of 25 source tokens, the output forced to exactly 25 tokens (EOS suppressed until
// then), as the CTranslate2 figures in docs/performance.md were measured. Weights as `transformer
// translate` uses them: packed float32 by default (greedy, beam4), int8 with --int8, plain float32
// with --no-packed-weights (the *_unpacked runs: what packing gains, in the same run).
// With `shortlist` = V' > 0, the output is restricted to V' fixed ids (EOS and 4, 14, 24, ...; the
// same set tools/ct2_peer.py bench --shortlist gives CTranslate2 as its vocabulary map), as
// `translate --shortlist` restricts it to a batch's selection.
enum class Weights { kPacked, kUnpacked, kInt8, kBf16 };  // kBf16: as translate --bf16

// Times translating 64 sentences of 25 random source tokens (ids from 4 up, seed 5) into exactly
// 25 tokens each with `model`, prepared as `weights` says, and sets the counters. Without scores
// (SearchOptions::return_scores), as `transformer translate` without --scores and CTranslate2's
// translate_batch by default; `scores` asks for them.
void time_translation(benchmark::State& state, Transformer& model, int64_t beam, Weights weights, int64_t shortlist,
                      bool scores = false) {
  const ModelConfig& c = model.config();
  if (weights == Weights::kInt8) model.quantize_int8(Transformer::PlainWeights::kRelease);
  if (weights == Weights::kPacked) model.pack_weights(Transformer::PlainWeights::kRelease);
  if (weights == Weights::kBf16) model.use_bf16_products(Transformer::PlainWeights::kRelease);
  const auto sources = random_sentences(64, 25, c.vocab_size, 5);
  SearchOptions o;
  o.beam_size = beam;
  o.max_length_a = 0;
  o.max_length_b = 26;  // 25 tokens + EOS
  o.min_length = 26;
  o.return_scores = scores;
  std::vector<int32_t> listed;
  for (int32_t id = 4; static_cast<int64_t>(listed.size()) + 1 < shortlist; id += 10) listed.push_back(id);
  const Shortlist fixed = Shortlist::build({{4}}, {listed}, c.vocab_size,
                                           {.per_source = 0, .frequent = std::max<int64_t>(1, shortlist)}, "");
  const Shortlist* selection = shortlist > 0 ? &fixed : nullptr;
  auto translate = [&] {
    int64_t n = 0;
    if (beam == 1) {
      for (const Hypothesis& h : greedy_search(model, sources, o, selection)) n += static_cast<int64_t>(h.tokens.size());
    } else {
      for (const auto& best : beam_search(model, sources, o, selection)) n += static_cast<int64_t>(best[0].tokens.size());
    }
    return n;
  };
  translate();  // untimed, as tools/ct2_peer.py's first batch: the decoding buffers' pages are new
  int64_t produced = 0;
  for (auto _ : state) produced += translate();
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(produced), benchmark::Counter::kIsRate);
  // 26 source positions (25 + EOS), 26 decoding steps (25 tokens + EOS), `beam` rows per sentence;
  // the output projection over V' columns with a shortlist.
  ModelConfig counted = c;
  if (shortlist > 0) counted.vocab_size = shortlist;
  const double flops = FlopCount(counted).decoding(64, 26, 26, static_cast<double>(beam));
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Translate(benchmark::State& state, int64_t beam, Weights weights, int64_t shortlist = 0, bool scores = false) {
  ModelConfig c = model_preset("base");
  c.vocab_size = 32000;
  c.pre_norm = true;
  Transformer model(c);
  model.init_parameters(1);
  time_translation(state, model, beam, weights, shortlist, scores);
}

// Translation with an imported OPUS-MT-shaped model: d=512, 8 heads, FFN 2048, 6+6
// layers, post-norm, swish, 58,101 vocabulary entries, tied embeddings, a logits bias, random
// weights. scripts/bench.sh writes it (tools/marian_files.py opus-mt-base, then `transformer import
// marian`), names its model file in TFM_BENCH_OPUS_MT, and converts the same .npz for CTranslate2
// with its OPUS-MT converter; without the variable these runs are not registered.
void BM_TranslateOpusMt(benchmark::State& state, const std::string& path, int64_t beam, Weights weights) {
  const std::unique_ptr<Transformer> model = load_model(path);
  time_translation(state, *model, beam, weights, 0);
}
[[maybe_unused]] const bool opus_mt_registered = [] {
  const char* path = std::getenv("TFM_BENCH_OPUS_MT");
  if (path == nullptr || *path == '\0') return false;
  const struct {
    const char* name;
    int64_t beam;
    Weights weights;
    int iterations;
  } runs[] = {{"greedy", 1, Weights::kPacked, 2}, {"beam4", 4, Weights::kPacked, 1},
              {"greedy_int8", 1, Weights::kInt8, 3}, {"beam4_int8", 4, Weights::kInt8, 2}};
  for (const auto& r : runs)
    benchmark::RegisterBenchmark((std::string("BM_TranslateOpusMt/") + r.name).c_str(),
                                 [path = std::string(path), r](benchmark::State& state) {
                                   BM_TranslateOpusMt(state, path, r.beam, r.weights);
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(r.iterations);
  return true;
}();

// The translation benchmark: 500 sentences of 25 tokens through the translator (batches of 64
// sentences, sorted by length), output forced to 25 tokens, base shape, greedy and beam 4: with
// translate's default, 8 batches on 2 threads are decoded two at a time (TranslateOptions::
// parallel_batches); `greedy_one_batch_at_a_time` decodes them one after the other on every thread.
void BM_Translate500(benchmark::State& state, int64_t beam, int64_t parallel_batches) {
  ModelConfig c = model_preset("base");
  c.vocab_size = 32000;
  c.pre_norm = true;
  Transformer model(c);
  model.init_parameters(1);
  model.pack_weights(Transformer::PlainWeights::kRelease);  // as `transformer translate` does
  const auto sources = random_sentences(500, 25, c.vocab_size, 9);
  TranslateOptions o;
  o.search.beam_size = beam;
  o.search.max_length_a = 0;
  o.search.max_length_b = 26;
  o.search.min_length = 26;
  o.parallel_batches = parallel_batches;
  o.search.return_scores = false;  // as translate without --scores
  // One untimed batch per thread first, decoded as the timed run decodes them (side by side, or one
  // after the other): their products' JIT kernels and each thread's first pages. The whole 500
  // again, as the other benchmarks take one untimed run, would double the benchmark's time.
  TranslateOptions warm = o;
  const int64_t threads = num_threads(), warm_sentences = std::min<int64_t>(64 * threads, 500);
  if (parallel_batches != 1) warm.parallel_batches = threads;
  benchmark::DoNotOptimize(translate_ids(model, {sources.begin(), sources.begin() + warm_sentences}, warm));
  int64_t produced = 0;
  for (auto _ : state)
    for (const Translation& t : translate_ids(model, sources, o)) produced += static_cast<int64_t>(t.hypotheses[0].tokens.size());
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(produced), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Translate500, greedy, 1, 0)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_Translate500, greedy_one_batch_at_a_time, 1, 1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Translate500, beam4, 4, 0)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// How the cost grows. Training: a whole step of the base model at 4096 tokens per side, in sentences of
// 16 to 256 tokens (256 to 16 sentences), so that only the attention's share changes. Translation:
// greedy, base shape, 25 forced tokens, batches of 1 to 256 sentences.
void BM_TrainScaling(benchmark::State& state) {
  ModelConfig c = model_preset("base");
  c.vocab_size = 8000;
  Transformer model(c);
  model.init_parameters(1);
  const int64_t L = state.range(0), B = 4096 / L;
  const Batch batch = make_batch(random_sentences(B, L - 1, c.vocab_size, 1), random_sentences(B, L - 1, c.vocab_size, 2), c);
  TrainingStep step(model);
  // One untimed step first, as the PyTorch peer takes one: the first step's pages of gradients,
  // Adam moments and activations are new to the process (about 1 GB of page faults for base).
  benchmark::DoNotOptimize(step.run(batch));
  for (auto _ : state) benchmark::DoNotOptimize(step.run(batch));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(batch.source_tokens + batch.target_tokens),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TranslateScaling(benchmark::State& state) {
  ModelConfig c = model_preset("base");
  c.vocab_size = 32000;
  c.pre_norm = true;
  Transformer model(c);
  model.init_parameters(1);
  const auto sources = random_sentences(state.range(0), 25, c.vocab_size, 5);
  SearchOptions o;
  o.beam_size = 1;
  o.max_length_a = 0;
  o.max_length_b = 26;
  o.min_length = 26;
  benchmark::DoNotOptimize(greedy_search(model, sources, o));  // one untimed run first
  int64_t produced = 0;
  for (auto _ : state)
    for (const Hypothesis& h : greedy_search(model, sources, o)) produced += static_cast<int64_t>(h.tokens.size());
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(produced), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_TrainScaling)->ArgName("len")->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)->Unit(benchmark::kMillisecond)
    ->UseRealTime()->Iterations(2);
BENCHMARK(BM_TranslateScaling)->ArgName("batch")->Arg(1)->Arg(4)->Arg(16)->Arg(64)->Arg(256)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

BENCHMARK_CAPTURE(BM_TrainStep, small, "small", ops::Precision::kFloat32)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);
BENCHMARK_CAPTURE(BM_TrainStep, base, "base", ops::Precision::kFloat32)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK_CAPTURE(BM_TrainStep, small_bf16, "small", ops::Precision::kBf16)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);
BENCHMARK_CAPTURE(BM_TrainStep, base_bf16, "base", ops::Precision::kBf16)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK_CAPTURE(BM_Translate, greedy, 1, Weights::kPacked)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
// With scores: every step's whole float32 output projection and log-softmax (ops/screen.h skips most of it without).
BENCHMARK_CAPTURE(BM_Translate, greedy_scores, 1, Weights::kPacked, 0, true)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK_CAPTURE(BM_Translate, beam4, 4, Weights::kPacked)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_Translate, greedy_unpacked, 1, Weights::kUnpacked)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK_CAPTURE(BM_Translate, beam4_unpacked, 4, Weights::kUnpacked)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_Translate, greedy_shortlist3200, 1, Weights::kPacked, 3200)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK_CAPTURE(BM_Translate, beam4_shortlist3200, 4, Weights::kPacked, 3200)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_Translate, greedy_int8_shortlist3200, 1, Weights::kInt8, 3200)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK_CAPTURE(BM_Translate, beam4_int8_shortlist3200, 4, Weights::kInt8, 3200)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK_CAPTURE(BM_Translate, greedy_bf16, 1, Weights::kBf16)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK_CAPTURE(BM_Translate, beam4_bf16, 4, Weights::kBf16)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_Translate, greedy_int8, 1, Weights::kInt8)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK_CAPTURE(BM_Translate, beam4_int8, 4, Weights::kInt8)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

}  // namespace
}  // namespace tfm
