// Masked-LM masking (data/masking.h) and the masked-LM batch (train/objective.h): the proportions
// over many tokens, specials never chosen, the masks a pure function of seed and stream, and the
// loss counting exactly the chosen positions.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "data/masking.h"
#include "decode/scorer.h"
#include "model/transformer.h"
#include "train/objective.h"

namespace tfm {
namespace {

constexpr int32_t kIgnore = 0;  // the pad id, which the loss skips

MaskingOptions options(int64_t vocab = 1000) {
  MaskingOptions o;
  o.mask_id = 4;
  o.vocab_size = vocab;
  o.special = {0, 1, 2, 3};
  o.seed = 7;
  return o;
}

// A sequence of `n` ordinary ids (5 .. vocab-1), drawn from `stream`.
std::vector<int32_t> ordinary_sequence(int64_t n, uint64_t stream, int64_t vocab = 1000) {
  const RngStream rng{99, stream};
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i)
    ids.push_back(5 + static_cast<int32_t>(rng.uniform_double(static_cast<uint64_t>(i)) * static_cast<double>(vocab - 5)));
  return ids;
}

TEST(Masking, CountIsTheFractionOfOrdinaryTokens) {
  EXPECT_EQ(masked_count(100, 0.15), 15);
  EXPECT_EQ(masked_count(3, 0.15), 1);  // at least one
  EXPECT_EQ(masked_count(0, 0.15), 0);
  EXPECT_EQ(masked_count(10, 1.0), 10);
  const MaskingOptions o = options();
  EXPECT_EQ(masked_count(std::vector<int32_t>{0, 7, 8, 3, 4, 9, 1, 2}, o), 1);  // 3 ordinary tokens
}

TEST(Masking, ProportionsOverManyTokens) {
  const MaskingOptions o = options();
  int64_t tokens = 0, chosen = 0, masked = 0, kept = 0, replaced = 0;
  for (uint64_t s = 0; s < 2000; ++s) {
    const std::vector<int32_t> ids = ordinary_sequence(100, s);
    const MaskedSequence m = mask_tokens(ids, o, masking_stream(0, static_cast<int64_t>(s)), kIgnore);
    ASSERT_EQ(m.input.size(), ids.size());
    ASSERT_EQ(m.chosen, 15);
    tokens += 100;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (m.targets[i] == kIgnore) {
        ASSERT_EQ(m.input[i], ids[i]) << "a position not chosen was changed";
        continue;
      }
      ASSERT_EQ(m.targets[i], ids[i]);
      ++chosen;
      if (m.input[i] == o.mask_id) ++masked;
      else if (m.input[i] == ids[i]) ++kept;
      else ++replaced;
    }
  }
  ASSERT_EQ(chosen, 2000 * 15);
  EXPECT_NEAR(static_cast<double>(chosen) / static_cast<double>(tokens), 0.15, 1e-9);
  const auto share = [&](int64_t n) { return static_cast<double>(n) / static_cast<double>(chosen); };
  EXPECT_NEAR(share(masked), 0.8, 0.015);
  EXPECT_NEAR(share(replaced), 0.1, 0.01);  // a random token may happen to be the same: it counts as kept
  EXPECT_NEAR(share(kept), 0.1, 0.01);
}

TEST(Masking, SpecialsAreNeverChosenNorDrawn) {
  MaskingOptions o = options(12);  // ordinary ids 5 .. 11: a random draw hits every one
  o.fraction = 0.5;
  for (uint64_t s = 0; s < 500; ++s) {
    const std::vector<int32_t> ids = {2, 5, 0, 6, 1, 7, 3, 8, 4, 9, 10, 11, 0, 0};
    const MaskedSequence m = mask_tokens(ids, o, s, kIgnore);
    EXPECT_EQ(m.chosen, masked_count(7, 0.5));
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] <= 4) {
        EXPECT_EQ(m.targets[i], kIgnore) << "special id " << ids[i] << " chosen";
        EXPECT_EQ(m.input[i], ids[i]);
      }
      if (m.input[i] != ids[i] && m.input[i] != o.mask_id) {
        EXPECT_GE(m.input[i], 5) << "a special drawn as the random replacement";
        EXPECT_LT(m.input[i], 12);
      }
    }
  }
}

TEST(Masking, ReproducibleFromTheSeedAndStream) {
  const MaskingOptions o = options();
  const std::vector<int32_t> ids = ordinary_sequence(60, 1);
  const MaskedSequence a = mask_tokens(ids, o, masking_stream(3, 17), kIgnore);
  const MaskedSequence b = mask_tokens(ids, o, masking_stream(3, 17), kIgnore);
  EXPECT_EQ(a.input, b.input);
  EXPECT_EQ(a.targets, b.targets);
  EXPECT_NE(a.targets, mask_tokens(ids, o, masking_stream(4, 17), kIgnore).targets) << "another epoch, same masks";
  EXPECT_NE(a.targets, mask_tokens(ids, o, masking_stream(3, 18), kIgnore).targets) << "another sentence, same masks";
  MaskingOptions other = o;
  other.seed = 8;
  EXPECT_NE(a.targets, mask_tokens(ids, other, masking_stream(3, 17), kIgnore).targets) << "another seed, same masks";
}

// The masked-LM batch: the masked sentences with their EOS as the encoder's input, the chosen
// tokens as targets; the loss counts exactly the chosen positions.
TEST(Masking, BatchLossCountsTheChosenPositions) {
  ModelConfig c = model_preset("tiny");
  c.architecture = "encoder-only";
  c.vocab_size = 40;
  c.d_model = 16, c.heads = 2, c.d_ff = 32, c.encoder_layers = 1;
  const Objective objective = make_objective(c, 0.15, 4, 5);
  ASSERT_EQ(objective.kind, Objective::Kind::kMasked);
  std::vector<Example> examples;
  for (uint64_t s = 0; s < 6; ++s) examples.push_back({{}, ordinary_sequence(10 + 7 * static_cast<int64_t>(s), s, 40)});
  const std::vector<int32_t> indices = {0, 1, 2, 3, 4, 5};
  const Batch batch = objective_batch(objective, examples, indices, c, 2);
  int64_t expected = 0;
  for (const Example& e : examples) expected += loss_tokens(objective, e);
  EXPECT_EQ(batch.target_tokens, expected);
  ASSERT_EQ(batch.tgt_out.shape(), batch.src.shape());
  const int64_t S = batch.src.size(1);
  for (int64_t b = 0; b < 6; ++b) {
    const auto len = static_cast<int64_t>(examples[static_cast<size_t>(b)].tgt.size());
    EXPECT_EQ(batch.src.data<int32_t>()[b * S + len], c.eos_id);
    EXPECT_EQ(batch.tgt_out.data<int32_t>()[b * S + len], c.pad_id) << "the EOS is predicted";
    const MaskedSequence m = mask_tokens(examples[static_cast<size_t>(b)].tgt, objective.masking,
                                         masking_stream(2, b), c.pad_id);
    for (int64_t t = 0; t < len; ++t) {
      EXPECT_EQ(batch.src.data<int32_t>()[b * S + t], m.input[static_cast<size_t>(t)]);
      EXPECT_EQ(batch.tgt_out.data<int32_t>()[b * S + t], m.targets[static_cast<size_t>(t)]);
    }
  }
  Transformer model(c);
  model.init_parameters(1);
  const ScoredBatch scored = score_batch(model, model.context(), batch, 0.0, nullptr);
  EXPECT_EQ(scored.sum.tokens, expected);
  EXPECT_GT(scored.sum.loss, 0);
}

}  // namespace
}  // namespace tfm
