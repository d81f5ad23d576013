// The whole model: every parameter's gradient against finite differences in double precision, for
// both layer-norm placements, with dropout on (each evaluation replays the same random streams);
// a padded batch gives each sentence the logits it gets alone; the parameter layout.
#include <gtest/gtest.h>

#include <functional>

#include <cmath>

#include "model/transformer.h"
#include "ops/loss.h"
#include "ops/positional.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

ModelConfig tiny_config(bool pre_norm, bool tied) {
  ModelConfig c = model_preset("tiny");
  c.vocab_size = 11;
  c.d_model = 8;
  c.heads = 2;
  c.d_ff = 12;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.pre_norm = pre_norm;
  c.tie_source_target = tied;
  return c;
}

Batch sample_batch(const ModelConfig& c) {
  return make_batch({{4, 5, 6, 7, 8}, {9, 4}, {10, 5, 7}}, {{5, 6, 7}, {8, 9, 10, 4, 6}, {7}}, c);
}

// Label-smoothed loss summed over target tokens; fills dlogits when given.
double batch_loss(const Transformer& model, const Batch& batch, uint64_t dropout_seed, Tensor* dlogits,
                  Transformer::Saved* saved) {
  Rng rng(dropout_seed);
  const Context ctx = model.context(&rng);
  const Tensor logits = model.forward(ctx, batch, saved);
  const Tensor flat = logits.view({logits.shape().rows(), model.config().vocab_size});
  const Tensor targets = batch.tgt_out.view({batch.tgt_out.numel()});
  Tensor lse = Tensor::empty({flat.size(0)}, flat.dtype());
  const ops::LossArgs args{0.1, model.config().pad_id};
  const ops::LossSum sum = ops::cross_entropy(flat, targets, args, lse);
  if (dlogits) {
    *dlogits = Tensor::zeros(logits.shape(), logits.dtype());
    ops::cross_entropy_backward(flat, targets, lse, args, 1.0, dlogits->view(flat.shape()));
  }
  return sum.loss;
}

struct ModelCase {
  const char* name;
  bool pre_norm, tied;
  void (*variant)(ModelConfig&) = nullptr;  // published models' configurations
};

// As an imported Marian model: swish, sines then cosines at Marian's rates, no padding token, the
// decoder starting from a zero vector, a logits bias.
void marian_like(ModelConfig& c) {
  c.activation = "swish";
  c.positions = "sin_cos";
  c.position_frequencies = "marian";
  c.pad_id = -1;
  c.bos_id = -1;
  c.output_bias = true;
}
// Other variants together: exact GELU, an output projection of its own, unscaled embeddings,
// positions from 2, the decoder starting from the padding token (Hugging Face), Marian's GELU.
void other_variants(ModelConfig& c) {
  c.activation = "gelu";
  c.tie_output = false;
  c.output_bias = true;
  c.scale_embeddings = false;
  c.position_offset = 2;
  c.bos_id = c.pad_id;
}
void gelu_sigmoid(ModelConfig& c) {
  c.activation = "gelu_sigmoid";
  c.positions = "sin_cos";
}
void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

class ModelGradTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelGradTest, EveryParameterMatchesFiniteDifferences) {
  ModelConfig config = tiny_config(GetParam().pre_norm, GetParam().tied);
  if (GetParam().variant) GetParam().variant(config);
  Transformer model(config, DType::F64);
  model.init_parameters(3);
  // Non-zero biases, so that a bias's gradient (the logits bias's included) is checked.
  for (int id = 0; id < model.params().size(); ++id)
    if (model.params().name(id).ends_with(".bias")) {
      const Tensor b = model.params().value(id);
      for (int64_t i = 0; i < b.numel(); ++i) b.data<double>()[i] = 0.05 * double((i * 7 + id) % 5) - 0.1;
    }
  const Batch batch = sample_batch(config);
  Transformer::Saved saved;
  Tensor dlogits;
  batch_loss(model, batch, 99, &dlogits, &saved);
  model.params().zero_grad();
  {
    Rng rng(99);  // the backward needs no new streams, but the context must say "training"
    model.backward(model.context(&rng), batch, saved, dlogits);
  }
  // One check over the whole flat buffer: every parameter, gaps included (their gradient is 0).
  testing::expect_gradients_match([&] { return batch_loss(model, batch, 99, nullptr, nullptr); },
                                  {{"parameters", model.params().values(), model.params().grads()}},
                                  {.step = 1e-6, .atol = 1e-7, .rtol = 1e-5});
}

// The backward pass reports each parameter's gradient complete (Context::grads_done, which
// data-parallel training sums over the ranks at once) exactly once, in grads_done_order()'s order,
// and only when nothing later in the pass changes it: at the report its gradient already has its
// final value.
TEST_P(ModelGradTest, GradientsAreReportedCompleteOnceAndFinal) {
  ModelConfig config = tiny_config(GetParam().pre_norm, GetParam().tied);
  if (GetParam().variant) GetParam().variant(config);
  Transformer model(config, DType::F64);
  model.init_parameters(3);
  const Batch batch = sample_batch(config);
  Transformer::Saved saved;
  Tensor dlogits;
  batch_loss(model, batch, 99, &dlogits, &saved);
  model.params().zero_grad();
  const ParamStore& params = model.params();
  std::vector<std::pair<int, int>> reported;
  std::vector<std::vector<double>> at_report(static_cast<size_t>(params.size()));
  const std::function<void(int, int)> done = [&](int first, int end) {
    reported.push_back({first, end});
    for (int id = first; id < end; ++id) at_report[static_cast<size_t>(id)] = params.grad(id).to_doubles();
  };
  Rng rng(99);
  Context ctx = model.context(&rng);
  ctx.on_grads_done = &done;
  model.backward(ctx, batch, saved, dlogits);
  EXPECT_EQ(reported, model.grads_done_order());
  std::vector<int> times(static_cast<size_t>(params.size()), 0);
  for (const auto& [first, end] : reported)
    for (int id = first; id < end; ++id) ++times[static_cast<size_t>(id)];
  for (int id = 0; id < params.size(); ++id) {
    EXPECT_EQ(times[static_cast<size_t>(id)], 1) << params.name(id) << " reported " << times[static_cast<size_t>(id)] << " times";
    if (times[static_cast<size_t>(id)] != 1) continue;
    const std::vector<double> final = params.grad(id).to_doubles();
    EXPECT_EQ(at_report[static_cast<size_t>(id)], final) << params.name(id) << " changed after it was reported complete";
    double norm = 0;
    for (double g : final) norm += g * g;
    EXPECT_GT(norm, 0) << params.name(id) << ": a zero gradient cannot show a late change";
  }
}

INSTANTIATE_TEST_SUITE_P(Model, ModelGradTest,
                         ::testing::Values(ModelCase{"post_ln_tied", false, true}, ModelCase{"pre_ln_tied", true, true},
                                           ModelCase{"post_ln_untied", false, false},
                                           ModelCase{"marian_like", false, true, marian_like},
                                           ModelCase{"pre_ln_other_variants", true, false, other_variants},
                                           ModelCase{"gelu_sigmoid", false, true, gelu_sigmoid}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Model, PaddedBatchMatchesEachSentenceAlone) {
  for (bool pre_norm : {false, true}) {
    ModelConfig config = tiny_config(pre_norm, true);
    if (pre_norm) marian_like(config);  // no padding token: padded positions hold -1
    Transformer model(config, DType::F64);
    model.init_parameters(5);
    const std::vector<std::vector<int32_t>> src = {{4, 5, 6, 7, 8}, {9, 4}, {10, 5, 7}};
    const std::vector<std::vector<int32_t>> tgt = {{5, 6, 7}, {8, 9, 10, 4, 6}, {7}};
    const Batch batch = make_batch(src, tgt, config);
    const Tensor logits = model.forward(model.context(), batch, nullptr);
    const int64_t T = batch.tgt_in.size(1), V = config.vocab_size;
    for (size_t b = 0; b < src.size(); ++b) {
      const Batch alone = make_batch({src[b]}, {tgt[b]}, config);
      const Tensor want = model.forward(model.context(), alone, nullptr);
      const std::vector<double> got = logits.to_doubles(), exp = want.to_doubles();
      for (int64_t t = 0; t < alone.tgt_in.size(1); ++t)
        for (int64_t v = 0; v < V; ++v)
          ASSERT_NEAR(got[(b * T + t) * V + v], exp[t * V + v], 1e-12) << "sentence " << b << " position " << t;
    }
  }
}

TEST(Model, ParameterNamesAndCounts) {
  ModelConfig c = model_preset("base");
  c.vocab_size = 8000;
  Transformer model(c);
  // The paper's base model with an 8,000-token shared vocabulary.
  const int64_t d = 512, f = 2048, attn = 4 * (d * d + d), ffn = d * f + f + f * d + d, norm = 2 * d;
  const int64_t expected = 8000 * d + 6 * (attn + ffn + 2 * norm) + 6 * (2 * attn + ffn + 3 * norm);
  EXPECT_EQ(model.params().parameter_count(), expected);
  EXPECT_GE(model.params().find("embed.weight"), 0);
  EXPECT_GE(model.params().find("decoder.layers.5.cross_attn.k_proj.weight"), 0);
  EXPECT_EQ(model.params().find("encoder.final_norm.weight"), -1);  // post-LN has none
  EXPECT_EQ(model.params().shape(model.params().find("encoder.layers.0.ffn.fc1.weight")), Shape({f, d}));
}

TEST(Model, PublishedVariantsChangeTheLogitsAsConfigured) {
  // Each variant changes the model's output (so none is silently ignored), and the zero-vector start
  // equals a start token whose embedding row is zero.
  ModelConfig base = tiny_config(false, true);
  const std::vector<std::vector<int32_t>> src = {{4, 5, 6}}, tgt = {{7, 8}};
  auto logits = [&](const ModelConfig& c, void (*edit)(Transformer&) = nullptr) {
    Transformer model(c, DType::F64);
    model.init_parameters(5);
    if (edit) edit(model);
    return model.forward(model.context(), make_batch(src, tgt, c), nullptr).to_doubles();
  };
  const std::vector<double> reference = logits(base);
  auto differs = [&](const char* field, void (*set)(ModelConfig&)) {
    ModelConfig c = base;
    set(c);
    const std::vector<double> got = logits(c);
    double diff = 0;
    for (size_t i = 0; i < got.size(); ++i) diff = std::max(diff, std::abs(got[i] - reference[i]));
    EXPECT_GT(diff, 1e-6) << field << " did not change the logits";
  };
  differs("activation swish", [](ModelConfig& c) { c.activation = "swish"; });
  differs("activation gelu", [](ModelConfig& c) { c.activation = "gelu"; });
  differs("activation gelu_sigmoid", [](ModelConfig& c) { c.activation = "gelu_sigmoid"; });
  differs("positions", [](ModelConfig& c) { c.positions = "sin_cos"; });
  differs("position_frequencies", [](ModelConfig& c) { c.position_frequencies = "marian"; });
  differs("position_offset", [](ModelConfig& c) { c.position_offset = 1; });
  differs("scale_embeddings", [](ModelConfig& c) { c.scale_embeddings = false; });
  differs("bos_id -1", [](ModelConfig& c) { c.bos_id = -1; });
  // bos_id −1 is the start token's embedding set to zeros.
  ModelConfig zero_start = base;
  zero_start.bos_id = -1;
  const std::vector<double> a = logits(zero_start);
  const std::vector<double> b = logits(base, [](Transformer& m) {
    const Tensor e = m.params().value(m.tgt_embedding);
    for (int64_t d = 0; d < e.size(1); ++d) e.data<double>()[m.config().bos_id * e.size(1) + d] = 0;
  });
  ASSERT_EQ(a.size(), b.size());
  const size_t V = static_cast<size_t>(base.vocab_size);
  for (size_t i = 0; i < a.size(); ++i)  // the zeroed row is also the projection's column for BOS
    if (i % V != static_cast<size_t>(base.bos_id)) ASSERT_NEAR(a[i], b[i], 1e-12) << i;
}

TEST(Model, PositionVariantsAreTheirFormulas) {
  // sin_cos + marian rates, from position 3: PE(p, i) = sin(p · 10000^(−i/(D/2−1))), PE(p, D/2 + i) = cos(...)
  const int64_t D = 8;
  Tensor pe = Tensor::empty({2, D}, DType::F64);
  ops::positional_encoding(pe, 3, {ops::PositionEncoding::Layout::kSinCos, ops::PositionEncoding::Rates::kMarian, 0});
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t i = 0; i < D / 2; ++i) {
      const double angle = double(3 + t) * std::pow(10000.0, -double(i) / double(D / 2 - 1));
      EXPECT_NEAR(pe.data<double>()[t * D + i], std::sin(angle), 1e-15);
      EXPECT_NEAR(pe.data<double>()[t * D + D / 2 + i], std::cos(angle), 1e-15);
    }
  // interleaved + paper rates with an offset of 2 is the paper's table two positions on.
  Tensor shifted = Tensor::empty({2, D}, DType::F64), plain = Tensor::empty({4, D}, DType::F64);
  ops::positional_encoding(shifted, 0, {ops::PositionEncoding::Layout::kInterleaved, ops::PositionEncoding::Rates::kPaper, 2});
  ops::positional_encoding(plain, 0);
  for (int64_t i = 0; i < 2 * D; ++i) EXPECT_EQ(shifted.data<double>()[i], plain.data<double>()[2 * D + i]);
}

TEST(Model, ConfigIsValidated) {
  for (auto set : std::vector<void (*)(ModelConfig&)>{
           [](ModelConfig& c) { c.activation = "tanh"; }, [](ModelConfig& c) { c.positions = "learned"; },
           [](ModelConfig& c) { c.position_frequencies = "t5"; }, [](ModelConfig& c) { c.position_offset = -1; },
           [](ModelConfig& c) { c.eos_id = -1; }, [](ModelConfig& c) { c.pad_id = -2; },
           [](ModelConfig& c) { c.unk_id = c.eos_id; }}) {
    ModelConfig c = model_preset("tiny");
    set(c);
    EXPECT_THROW(c.validate(), Error);
  }
  ModelConfig c = model_preset("tiny");
  c.heads = 3;  // 32 is not divisible by 3
  EXPECT_THROW(Transformer model(c), Error);
  EXPECT_THROW(model_preset("huge"), Error);
}

}  // namespace
}  // namespace tfm
