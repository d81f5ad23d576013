// Whole models on the GPU against the CPU: training's forward and backward, the committed tiny
// model's translations and scores, an untied output projection in bf16 with a shortlist, and NCCL.
#include "cuda/common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "decode/search.h"
#include "decode/shortlist.h"
#include "dist/communicator.h"
#include "dist/device_communicator.h"
#include "model/transformer.h"
#include "ops/loss.h"
#include "testing/decoding.h"
#include "train/batch_loss.h"
#include "transformer/translator.h"

namespace tfm {
namespace {

// A model small enough to compare element by element, 2 + 2 layers, and three pairs of sentences
// of uneven lengths for it.
ModelConfig small_config() {
  ModelConfig c = model_preset("tiny");
  c.vocab_size = 50;
  c.d_model = 32;
  c.heads = 4;
  c.d_ff = 64;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  return c;
}
Batch small_batch(const ModelConfig& c) {
  return make_batch({{4, 5, 6, 7, 8, 9, 10}, {9, 4}, {10, 5, 7, 30, 31}}, {{5, 6, 7}, {8, 9, 10, 4, 6, 40, 41}, {7}},
                    c);
}

// The whole model: logits, loss and every parameter's gradient on the GPU against the CPU, with
// dropout on (the same streams, so the same masks), for both layer-norm placements.
TEST(Cuda, WholeModelForwardAndBackward) {
  REQUIRE_GPU();
  // Without dropout, each sublayer's residual goes into its last product's call (ops::linear's
  // residual) and Residual::backward takes its gradient; with dropout, the sum comes after it.
  for (const auto& [pre_norm, dropout] : {std::pair{false, 0.1}, std::pair{true, 0.1}, std::pair{false, 0.0},
                                          std::pair{true, 0.0}}) {
    ModelConfig c = small_config();
    c.pre_norm = pre_norm;
    c.dropout = dropout;
    const std::string what = cat(pre_norm ? "pre-norm" : "post-norm", dropout > 0 ? ", dropout" : ", no dropout");
    Transformer model(c);
    model.init_parameters(11);
    const Batch batch = small_batch(c);
    struct Result {
      Tensor logits, grads;
      double loss = 0;
    };
    auto run = [&](const Batch& b) {
      Rng rng(99);
      const Context ctx = model.context(&rng);
      Transformer::Saved saved;
      Result r;
      const Tensor logits = model.forward(ctx, b, &saved);
      r.logits = logits.clone();
      const Tensor flat = logits.view({logits.shape().rows(), c.vocab_size});
      const Tensor targets = b.tgt_out.view({b.tgt_out.numel()});
      const Tensor lse = Tensor::empty({flat.size(0)}, flat.dtype(), flat.device());
      const ops::LossArgs args{0.1, c.pad_id};
      const ops::LossSum sum = ops::cross_entropy(flat, targets, args, lse);
      r.loss = sum.loss;
      ops::cross_entropy_backward_in_place(flat, targets, lse, args, 1.0 / double(sum.tokens));
      model.params().zero_grad();
      model.backward(ctx, b, saved, logits);
      r.grads = model.params().grads().to_device(Device::CPU);
      return r;
    };
    const Result cpu = run(batch);
    model.params().to_device(kGpu);
    const int64_t residuals_before = cuda::kernels()->residual_products();
    const Result gpu = run(to_device(batch, kGpu));
    const int64_t residuals = cuda::kernels()->residual_products() - residuals_before;
    std::printf("%s: %lld products took their residual in the call\n", what.c_str(), static_cast<long long>(residuals));
    EXPECT_EQ(gpu.logits.device(), kGpu);
    // The batch left on the host (as training passes it: each op copies its ids, lengths and
    // targets over): the same kernels on the same values, so the same bits.
    const Result host_batch = run(batch);
    expect_identical(gpu.logits.to_device(Device::CPU), host_batch.logits, "logits from a batch on the host");
    expect_identical(gpu.grads, host_batch.grads, "gradients from a batch on the host");
    EXPECT_EQ(host_batch.loss, gpu.loss);
    expect_close(cpu.logits, gpu.logits, what + " logits");
    EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * std::abs(cpu.loss));
    // Each parameter's gradient relative to its own largest element, or to 1e-3 of the model's
    // largest where a gradient is (mathematically) zero: the keys' biases, which softmax ignores.
    double largest = 0, worst = 0;
    for (double g : cpu.grads.to_doubles()) largest = std::max(largest, std::abs(g));
    for (int id = 0; id < model.params().size(); ++id) {
      const int64_t off = model.params().offset(id), n = model.params().shape(id).numel();
      worst = std::max(worst, expect_close(cpu.grads.view({cpu.grads.numel()}).rows(off, n),
                                           gpu.grads.view({gpu.grads.numel()}).rows(off, n),
                                           cat(what, " gradient of ", model.params().name(id)),
                                           1e-4, 1e-3 * largest));
    }
    std::printf("%s: largest gradient difference %.2e of the parameter's largest\n", what.c_str(), worst);
  }
}

// `train --bf16` on the GPU (Context::use_bf16_activations: the activations products read kept in
// bfloat16, the weights' bfloat16 copy made once, the loss's gradient in bfloat16) against the same on the CPU: the same bfloat16
// inputs to every product, float32 sums in another order, so the loss within 1e-5 and each
// gradient within 1e-3 of its parameter's largest.
TEST(Cuda, Bf16ActivationsTrainAsOnTheCpu) {
  REQUIRE_GPU();
  const ModelConfig c = small_config();
  Transformer model(c);
  model.init_parameters(12);
  const Batch batch = small_batch(c);
  // One training batch as the trainer runs it (train/batch_loss.h): the loss's gradient written in
  // bfloat16 (ops::cross_entropy_backward_bf16) and the backward pass from it.
  auto run = [&](const Batch& b, double* loss) {
    Rng rng(99);
    Context ctx = model.context(&rng);
    ctx.use_bf16_activations();
    model.params().zero_grad();
    const ops::LossSum sum = batch_loss(model, ctx, b, 0.1, 1.0 / double(b.target_tokens), true);
    *loss = sum.loss;
    return model.params().grads().to_device(Device::CPU);
  };
  double cpu_loss = 0, gpu_loss = 0;
  const Tensor cpu = run(batch, &cpu_loss);
  model.params().to_device(kGpu);
  const Tensor gpu = run(to_device(batch, kGpu), &gpu_loss);
  EXPECT_NEAR(gpu_loss, cpu_loss, 1e-5 * std::abs(cpu_loss));
  // Relative to each parameter's largest gradient, or to 1e-3 of the model's where a gradient is
  // (mathematically) zero: the keys' biases.
  double largest = 0;
  for (double g : cpu.to_doubles()) largest = std::max(largest, std::abs(g));
  for (int id = 0; id < model.params().size(); ++id) {
    const int64_t off = model.params().offset(id), n = model.params().shape(id).numel();
    expect_close(cpu.view({cpu.numel()}).rows(off, n), gpu.view({gpu.numel()}).rows(off, n),
                 cat("bf16 gradient of ", model.params().name(id)), 1e-3, 1e-3 * largest);
  }
}

// The committed tiny model translates the same on the GPU as on the CPU: greedy and beam 4, the
// same text and the same scores, and as the committed expected outputs. (TFM_FIXTURE_DIR in the
// environment points at the fixtures where the binary runs elsewhere than it was built.)
TEST(Cuda, TranslatesTheCommittedModelAsTheCpu) {
  REQUIRE_GPU();
  const char* env = std::getenv("TFM_FIXTURE_DIR");
  const std::string dir = std::string(env != nullptr ? env : TFM_FIXTURE_DIR) + "/tiny_model";
  auto lines = [](const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  const std::vector<std::string> input = lines(dir + "/input.en");
  ASSERT_EQ(input.size(), 10u) << "no fixture at " << dir;
  transformer::TranslatorOptions plain;
  plain.weights = transformer::TranslatorOptions::Weights::kPlain;
  transformer::TranslatorOptions gpu = plain;
  gpu.device = "cuda";
  const transformer::Translator on_cpu(dir + "/model.safetensors", plain), on_gpu(dir + "/model.safetensors", gpu);
  for (const auto& [beam, file] : {std::pair<int64_t, const char*>{1, "expected.greedy.de"}, {4, "expected.beam4.de"}}) {
    SCOPED_TRACE(file);
    transformer::TranslateOptions o;
    o.search.beam_size = beam;
    const auto a = on_cpu.translate(input, o), b = on_gpu.translate(input, o);
    const std::vector<std::string> expected = lines(dir + "/" + file);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].hypotheses.empty(), b[i].hypotheses.empty()) << "line " << i + 1;
      if (a[i].hypotheses.empty()) continue;
      EXPECT_EQ(b[i].best().text, a[i].best().text) << "line " << i + 1;
      EXPECT_EQ(b[i].best().text, expected[i]) << "line " << i + 1;
      EXPECT_NEAR(b[i].best().score, a[i].best().score, 1e-4) << "line " << i + 1;
    }
  }
  // The Translator's own ways on a GPU: packed (the default: fused Q, K and V, biases in the
  // epilogues) as the CPU's plain float32; bf16 (the weights rounded to bfloat16 once) as the CPU's
  // bf16, the same definition.
  transformer::TranslatorOptions packed_gpu;
  packed_gpu.device = "cuda";
  transformer::TranslatorOptions bf16_cpu;
  bf16_cpu.weights = transformer::TranslatorOptions::Weights::kBf16;
  transformer::TranslatorOptions bf16_gpu = bf16_cpu;
  bf16_gpu.device = "cuda";
  const transformer::Translator packed_on_gpu(dir + "/model.safetensors", packed_gpu),
      bf16_on_cpu(dir + "/model.safetensors", bf16_cpu), bf16_on_gpu(dir + "/model.safetensors", bf16_gpu);
  for (const int64_t beam : {int64_t{1}, int64_t{4}}) {
    SCOPED_TRACE(cat("beam ", beam, ", packed and bf16 weights"));
    transformer::TranslateOptions o;
    o.search.beam_size = beam;
    const auto a = on_cpu.translate(input, o), b = packed_on_gpu.translate(input, o);
    const auto a16 = bf16_on_cpu.translate(input, o), b16 = bf16_on_gpu.translate(input, o);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a16.size(), b16.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].hypotheses.empty() || a16[i].hypotheses.empty()) continue;
      EXPECT_EQ(b[i].best().text, a[i].best().text) << "packed, line " << i + 1;
      EXPECT_NEAR(b[i].best().score, a[i].best().score, 1e-4) << "packed, line " << i + 1;
      EXPECT_EQ(b16[i].best().text, a16[i].best().text) << "bf16, line " << i + 1;
      EXPECT_NEAR(b16[i].best().score, a16[i].best().score, 1e-4) << "bf16, line " << i + 1;
    }
  }
  std::vector<std::string> sources, targets;
  const std::vector<std::string> greedy = lines(dir + "/expected.greedy.de");
  for (size_t i = 0; i < input.size(); ++i)
    if (!input[i].empty()) {
      sources.push_back(input[i]);
      targets.push_back(greedy[i]);
    }
  const auto cpu_scores = on_cpu.score(sources, targets), gpu_scores = on_gpu.score(sources, targets);
  ASSERT_EQ(cpu_scores.size(), gpu_scores.size());
  for (size_t i = 0; i < cpu_scores.size(); ++i) EXPECT_NEAR(gpu_scores[i].total, cpu_scores[i].total, 1e-4);
  // Scoring in bf16 runs on the packed copies alone (the float32 weights were given back).
  const auto cpu16 = bf16_on_cpu.score(sources, targets), gpu16 = bf16_on_gpu.score(sources, targets);
  ASSERT_EQ(cpu16.size(), gpu16.size());
  for (size_t i = 0; i < cpu16.size(); ++i) EXPECT_NEAR(gpu16[i].total, cpu16[i].total, 1e-4);
}

// A model with an output projection of its own (tie_output false: imported Marian and Hugging Face
// models) on a GPU with its weights packed in bf16 and the float32 ones given back (translate
// --device cuda --bf16): the output projection's float32 weight stays (a shortlist selects its rows
// from it), and greedy and beam 3, with and without a shortlist, give the tokens of the same model
// kept whole on the GPU, and the CPU's plain bf16 products' (the same definition) within 1e-4.
TEST(Cuda, UntiedOutputProjectionWithBf16WeightsAndAShortlist) {
  REQUIRE_GPU();
  ModelConfig c = testing::tiny_decoding_config(13);
  c.tie_output = false;
  Transformer cpu(c), kept(c), released(c);
  for (Transformer* m : {&cpu, &kept, &released}) m->init_parameters(7);
  ASSERT_NE(cpu.output_weight, cpu.tgt_embedding);
  cpu.set_inference_products(ops::Precision::kBf16);
  using P = Transformer::PlainWeights;
  for (auto& [model, plain] : {std::pair{&kept, P::kKeep}, std::pair{&released, P::kRelease}}) {
    model->params().to_device(kGpu, /*gradients=*/false);
    model->pack_weights(plain, ops::Precision::kBf16);
  }
  EXPECT_FALSE(released.params().released(released.output_weight));
  const Shortlist shortlist = Shortlist::build({{4}}, {{4, 6, 9, 11}}, 13, {.per_source = 0, .frequent = 4}, "");
  const std::vector<std::vector<int32_t>> src = {{4, 5, 6, 7}, {8, 9}, {10, 4, 11, 5, 12, 6}, {7}};
  for (const int64_t beam : {int64_t{1}, int64_t{3}})
    for (const Shortlist* listed : {static_cast<const Shortlist*>(nullptr), &shortlist}) {
      SCOPED_TRACE(cat("beam ", beam, listed != nullptr ? ", shortlist" : ""));
      SearchOptions o;
      o.beam_size = beam;
      const auto a = beam_search(cpu, src, o, listed), b = beam_search(kept, src, o, listed),
                 r = beam_search(released, src, o, listed);
      ASSERT_EQ(a.size(), src.size());
      ASSERT_EQ(b.size(), src.size());
      ASSERT_EQ(r.size(), src.size());
      for (size_t i = 0; i < src.size(); ++i) {
        ASSERT_FALSE(a[i].empty() || b[i].empty() || r[i].empty()) << "sentence " << i;
        EXPECT_EQ(r[i][0].tokens, b[i][0].tokens) << "sentence " << i << ": released against kept";
        EXPECT_EQ(r[i][0].score, b[i][0].score) << "sentence " << i << ": released against kept";
        EXPECT_EQ(r[i][0].tokens, a[i][0].tokens) << "sentence " << i << ": GPU against CPU";
        EXPECT_NEAR(r[i][0].score, a[i][0].score, 1e-4) << "sentence " << i << ": GPU against CPU";
        if (listed == nullptr) continue;
        for (int32_t id : r[i][0].tokens) {
          EXPECT_TRUE(id == 4 || id == 6 || id == 9 || id == 11) << id;
        }
      }
    }
}

// NCCL (several GPUs) with the one rank a machine with one GPU can run: its send and
// receive calls move every slice to its place and back (a wrong offset or count would garble the
// buffer), for float32 and float64, a whole buffer and a range inside one. Where the build has no
// NCCL, dist::nccl() refuses with an error that says so.
TEST(Cuda, NcclOneRankRunsTheTreeAllReduce) {
  REQUIRE_GPU();
  if (dist::device_engine().empty()) {
    EXPECT_THROW(
        {
          try {
            dist::nccl(dist::single_process());
          } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("needs NCCL"), std::string::npos) << e.what();
            throw;
          }
        },
        Error);
    GTEST_SKIP() << "this build has no NCCL";
  }
  select_device(kGpu, 0);  // what a rank does first; 0 is also the default
  EXPECT_THROW(select_device(kGpu, device_count(kGpu)), Error);
  const std::unique_ptr<dist::DeviceCommunicator> comm = dist::nccl(dist::single_process());
  EXPECT_NE(comm->backend().find("NCCL 2."), std::string::npos) << comm->backend();
  for (const DType dtype : {DType::F32, DType::F64}) {
    SCOPED_TRACE(name(dtype));
    const Tensor cpu = testing::random_tensor({1, 10007}, 21, -1, 1).to(dtype);
    const Tensor gpu = cpu.to_device(kGpu);
    comm->all_reduce_tree(gpu, 1);
    const Tensor flat = gpu.view({10007});
    comm->all_reduce_tree(flat.rows(123, 4567), 1);
    EXPECT_EQ(std::memcmp(gpu.to_device(Device::CPU).raw(), cpu.raw(), 10007 * size_of(dtype)), 0);
  }
  EXPECT_THROW(comm->all_reduce_tree(testing::random_tensor({4}, 1, -1, 1).to(DType::F32), 1), Error);  // on the CPU
  EXPECT_THROW(comm->all_reduce_tree(on_gpu(random({4}, 1)), 2), Error);  // 2 contributors of 1 rank
}

}  // namespace
}  // namespace tfm
