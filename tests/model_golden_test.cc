// Golden check of the whole model against PyTorch: a tiny Transformer built from torch.nn layers
// (tools/make_fixtures.py) with given weights and dropout off, on a padded batch of sentences of
// different lengths. Logits, the label-smoothed loss and the gradient of every parameter must match,
// for post-LN and pre-LN, in float64 and float32.
#include <gtest/gtest.h>

#include "model/transformer.h"
#include "ops/loss.h"
#include "testing/fixture.h"

namespace tfm {
namespace {

using testing::all_close;
using testing::Fixture;
using testing::load_fixture;

struct GoldenCase {
  const char* file;
  DType dtype;
  double rtol, atol;  // float64: agreement to rounding; float32: single-precision accumulation
};
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.file << " " << name(c.dtype); }

class ModelGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

// Rebuilds token sequences (without specials) from a padded id tensor and its lengths.
std::vector<std::vector<int32_t>> unpad(const Tensor& ids, const Tensor& lengths) {
  std::vector<std::vector<int32_t>> out;
  const int64_t L = ids.size(1);
  for (int64_t b = 0; b < ids.size(0); ++b) {
    const int32_t* row = ids.data<int32_t>() + b * L;
    out.emplace_back(row, row + lengths.data<int32_t>()[b] - 1);  // drop EOS
  }
  return out;
}

TEST_P(ModelGoldenTest, LogitsLossAndEveryGradientMatchPyTorch) {
  const GoldenCase& gc = GetParam();
  const Fixture f = load_fixture(gc.file);
  ModelConfig c;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("d_model");
  c.heads = f.integer("heads");
  c.d_ff = f.integer("d_ff");
  c.encoder_layers = f.integer("encoder_layers");
  c.decoder_layers = f.integer("decoder_layers");
  c.pre_norm = f.boolean("pre_norm");
  c.pad_id = static_cast<int32_t>(f.integer("pad_id"));
  c.bos_id = static_cast<int32_t>(f.integer("bos_id"));
  c.eos_id = static_cast<int32_t>(f.integer("eos_id"));
  Transformer model(c, gc.dtype);

  // Every one of our parameters comes from the fixture, by name, and the counts agree.
  int64_t loaded = 0;
  for (int id = 0; id < model.params().size(); ++id) {
    const std::string& n = model.params().name(id);
    ASSERT_TRUE(f.has("param:" + n)) << "fixture has no parameter " << n;
    model.params().value(id).copy_from(f.tensor("param:" + n, gc.dtype));
    loaded += model.params().value(id).numel();
  }
  EXPECT_EQ(loaded, model.params().parameter_count());

  // The batch we build from the sentences is the one PyTorch saw.
  const Tensor src = f.tensor("src", DType::I32), src_len = f.tensor("src_lengths", DType::I32);
  const Tensor tgt_out = f.tensor("tgt_out", DType::I32), tgt_len = f.tensor("tgt_lengths", DType::I32);
  const Batch batch = make_batch(unpad(src, src_len), unpad(tgt_out, tgt_len), c);
  ASSERT_EQ(batch.src.to_doubles(), src.to_doubles());
  ASSERT_EQ(batch.tgt_in.to_doubles(), f.tensor("tgt_in", DType::I32).to_doubles());
  ASSERT_EQ(batch.tgt_out.to_doubles(), tgt_out.to_doubles());

  Transformer::Saved saved;
  const Tensor logits = model.forward(model.context(), batch, &saved);
  EXPECT_TRUE(all_close(logits, f.tensor("logits", gc.dtype), gc.rtol, gc.atol));

  const Tensor flat = logits.view({logits.shape().rows(), c.vocab_size});
  const Tensor targets = batch.tgt_out.view({batch.tgt_out.numel()});
  Tensor lse = Tensor::empty({flat.size(0)}, gc.dtype);
  const ops::LossArgs args{f.number("smoothing"), c.pad_id};
  const ops::LossSum loss = ops::cross_entropy(flat, targets, args, lse);
  EXPECT_EQ(loss.tokens, f.integer("tokens"));
  EXPECT_NEAR(loss.loss, f.number("loss"), gc.rtol * std::abs(f.number("loss")) + gc.atol);

  Tensor dlogits = Tensor::zeros(logits.shape(), gc.dtype);
  ops::cross_entropy_backward(flat, targets, lse, args, 1.0, dlogits.view(flat.shape()));
  model.params().zero_grad();
  model.backward(model.context(), batch, saved, dlogits);
  for (int id = 0; id < model.params().size(); ++id) {
    const std::string& n = model.params().name(id);
    EXPECT_TRUE(all_close(model.params().grad(id), f.tensor("grad:" + n, gc.dtype), gc.rtol, gc.atol))
        << "gradient of " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, ModelGoldenTest,
                         ::testing::Values(GoldenCase{"model_post_ln.json", DType::F64, 1e-9, 1e-11},
                                           GoldenCase{"model_pre_ln.json", DType::F64, 1e-9, 1e-11},
                                           GoldenCase{"model_post_ln.json", DType::F32, 2e-4, 2e-5},
                                           GoldenCase{"model_pre_ln.json", DType::F32, 2e-4, 2e-5}),
                         [](const auto& info) {
                           std::string n = info.param.file;
                           return n.substr(0, n.find('.')) + "_" + name(info.param.dtype);
                         });

}  // namespace
}  // namespace tfm
