// The whole model: every parameter's gradient against finite differences in double precision, for
// both layer-norm placements, with dropout on (each evaluation replays the same random streams);
// a padded batch gives each sentence the logits it gets alone; the parameter layout.
#include <gtest/gtest.h>

#include "model/transformer.h"
#include "ops/loss.h"
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
};
void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

class ModelGradTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelGradTest, EveryParameterMatchesFiniteDifferences) {
  const ModelConfig config = tiny_config(GetParam().pre_norm, GetParam().tied);
  Transformer model(config, DType::F64);
  model.init_parameters(3);
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

INSTANTIATE_TEST_SUITE_P(Model, ModelGradTest,
                         ::testing::Values(ModelCase{"post_ln_tied", false, true}, ModelCase{"pre_ln_tied", true, true},
                                           ModelCase{"post_ln_untied", false, false}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Model, PaddedBatchMatchesEachSentenceAlone) {
  for (bool pre_norm : {false, true}) {
    const ModelConfig config = tiny_config(pre_norm, true);
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

TEST(Model, ConfigIsValidated) {
  ModelConfig c = model_preset("tiny");
  c.heads = 3;  // 32 is not divisible by 3
  EXPECT_THROW(Transformer model(c), Error);
  EXPECT_THROW(model_preset("huge"), Error);
}

}  // namespace
}  // namespace tfm
