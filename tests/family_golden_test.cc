// Golden check of the model family against PyTorch: GPT-2-, Llama- and BERT-like models written in
// plain torch from the definitions (tools/family_reference.py, tools/make_family_fixtures.py), with
// given weights and dropout off, on padded batches of different lengths. The logits, the
// label-smoothed loss and every parameter's gradient must match, in float64 and float32; for the
// decoders, incremental decoding (one token at a time through the key/value cache) must give the
// reference's per-step logits.
#include <gtest/gtest.h>

#include "model/transformer.h"
#include "ops/loss.h"
#include "testing/fixture.h"

namespace tfm {
namespace {

using testing::all_close;
using testing::Fixture;
using testing::load_fixture;

struct FamilyCase {
  const char* file;
  DType dtype;
  double rtol, atol;  // float64: agreement to rounding; float32: single-precision accumulation
};
void PrintTo(const FamilyCase& c, std::ostream* os) { *os << c.file << " " << name(c.dtype); }

class FamilyGoldenTest : public ::testing::TestWithParam<FamilyCase> {};

ModelConfig fixture_config(const Fixture& f) {
  ModelConfig c;
  from_json(f.json("config"), c);
  c.validate();
  return c;
}

// Every one of the model's parameters comes from the fixture, by name, and the counts agree.
void load_parameters(Transformer& model, const Fixture& f, DType dtype) {
  int64_t loaded = 0;
  for (int id = 0; id < model.params().size(); ++id) {
    const std::string& n = model.params().name(id);
    ASSERT_TRUE(f.has("param:" + n)) << "fixture has no parameter " << n;
    model.params().value(id).copy_from(f.tensor("param:" + n, dtype));
    loaded += model.params().value(id).numel();
  }
  EXPECT_EQ(loaded, model.params().parameter_count());
  EXPECT_EQ(static_cast<size_t>(model.params().size()), f.json("parameter_names").size())
      << "the fixture has parameters the model did not register";
}

// The token rows of a padded int32 [B, L] tensor, each cut at its length.
std::vector<std::vector<int32_t>> rows(const Tensor& ids, const Tensor& lengths, int64_t trim_front, int64_t trim_back) {
  std::vector<std::vector<int32_t>> out;
  const int64_t L = ids.size(1);
  for (int64_t b = 0; b < ids.size(0); ++b) {
    const int32_t* row = ids.data<int32_t>() + b * L;
    out.emplace_back(row + trim_front, row + lengths.data<int32_t>()[b] - trim_back);
  }
  return out;
}

// The batch the reference saw: a decoder's from its sequences (make_lm_batch must rebuild the
// reference's inputs and next-token targets), an encoder's as given (masked inputs, segments).
Batch fixture_batch(const Fixture& f, const ModelConfig& c) {
  if (c.architecture == "decoder-only") {
    const Tensor ids = f.tensor("ids", DType::I32), lengths = f.tensor("lengths", DType::I32);
    Batch batch = make_lm_batch(rows(ids, lengths, 1, 1), c);  // without bos and eos
    EXPECT_EQ(batch.tgt_in.to_doubles(), f.tensor("inputs", DType::I32).to_doubles());
    EXPECT_EQ(batch.tgt_out.to_doubles(), f.tensor("targets", DType::I32).to_doubles());
    return batch;
  }
  Batch batch;
  batch.src = f.tensor("inputs", DType::I32);
  batch.src_lengths = f.tensor("input_lengths", DType::I32);
  batch.token_types = f.tensor("token_type_ids", DType::I32);
  batch.tgt_out = f.tensor("targets", DType::I32);
  return batch;
}

TEST_P(FamilyGoldenTest, LogitsLossAndEveryGradientMatchPyTorch) {
  const FamilyCase& fc = GetParam();
  const Fixture f = load_fixture(std::string("family/") + fc.file);
  const ModelConfig c = fixture_config(f);
  Transformer model(c, fc.dtype);
  load_parameters(model, f, fc.dtype);
  const Batch batch = fixture_batch(f, c);

  Transformer::Saved saved;
  const Tensor logits = model.forward(model.context(), batch, &saved);  // [B, L, V]
  EXPECT_TRUE(all_close(logits, f.tensor("logits", fc.dtype), fc.rtol, fc.atol));

  const Tensor flat = logits.view({logits.shape().rows(), c.vocab_size});  // [B·L, V]
  const Tensor targets = batch.tgt_out.view({batch.tgt_out.numel()});      // [B·L]
  Tensor lse = Tensor::empty({flat.size(0)}, fc.dtype);                    // [B·L]
  const ops::LossArgs args{f.number("smoothing"), c.pad_id};
  const ops::LossSum loss = ops::cross_entropy(flat, targets, args, lse);
  ASSERT_EQ(loss.tokens, f.integer("tokens"));
  EXPECT_NEAR(loss.loss / loss.tokens, f.number("loss"), fc.rtol * std::abs(f.number("loss")) + fc.atol);

  Tensor dlogits = Tensor::zeros(logits.shape(), fc.dtype);  // [B, L, V]
  ops::cross_entropy_backward(flat, targets, lse, args, 1.0 / static_cast<double>(loss.tokens),
                              dlogits.view(flat.shape()));
  model.params().zero_grad();
  model.backward(model.context(), batch, saved, dlogits);
  for (int id = 0; id < model.params().size(); ++id) {
    const std::string& n = model.params().name(id);
    EXPECT_TRUE(all_close(model.params().grad(id), f.tensor("grad:" + n, fc.dtype), fc.rtol, fc.atol))
        << "gradient of " << n;
  }
}

// Each sequence alone, one token at a time through the cache, against the reference's step logits.
TEST_P(FamilyGoldenTest, IncrementalDecodingMatchesTheReferenceSteps) {
  const FamilyCase& fc = GetParam();
  const Fixture f = load_fixture(std::string("family/") + fc.file);
  const ModelConfig c = fixture_config(f);
  if (c.architecture != "decoder-only") GTEST_SKIP() << "an encoder does not decode";
  Transformer model(c, fc.dtype);
  load_parameters(model, f, fc.dtype);
  const Tensor inputs = f.tensor("inputs", DType::I32), lengths = f.tensor("input_lengths", DType::I32);
  const Tensor want = f.tensor("step_logits", fc.dtype);  // [B, L, V]
  const int64_t L = inputs.size(1), V = c.vocab_size;
  const Context ctx = model.context();
  for (int64_t b = 0; b < inputs.size(0); ++b) {
    DecodeState state = model.start_decoding(ctx, 1, L);
    for (int64_t t = 0; t < lengths.data<int32_t>()[b]; ++t) {
      Tensor token = Tensor::empty({1}, DType::I32);  // [R = 1]
      token.data<int32_t>()[0] = inputs.data<int32_t>()[b * L + t];
      const Tensor step = model.decode_step(ctx, state, token);  // [1, V]
      const Tensor expected = want.view({want.size(0) * L, V}).rows(b * L + t, 1);  // [1, V]
      EXPECT_TRUE(all_close(step, expected, fc.rtol, fc.atol)) << "sequence " << b << ", step " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Family, FamilyGoldenTest,
                         ::testing::Values(FamilyCase{"gpt2.json", DType::F64, 1e-9, 1e-11},
                                           FamilyCase{"gpt2.json", DType::F32, 2e-4, 2e-5},
                                           FamilyCase{"bert.json", DType::F64, 1e-9, 1e-11},
                                           FamilyCase{"bert.json", DType::F32, 2e-4, 2e-5},
                                           FamilyCase{"llama.json", DType::F64, 1e-9, 1e-11},
                                           FamilyCase{"llama.json", DType::F32, 2e-4, 2e-5},
                                           FamilyCase{"llama_mqa.json", DType::F64, 1e-9, 1e-11},
                                           FamilyCase{"llama_mqa.json", DType::F32, 2e-4, 2e-5},
                                           FamilyCase{"llama_partial_interleaved.json", DType::F64, 1e-9, 1e-11},
                                           FamilyCase{"llama_partial_interleaved.json", DType::F32, 2e-4, 2e-5}),
                         [](const auto& info) {
                           std::string n = info.param.file;
                           n = n.substr(0, n.find('.')) + "_" + name(info.param.dtype);
                           return n;
                         });

}  // namespace
}  // namespace tfm
