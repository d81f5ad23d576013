// ops::screened_argmax (greedy search's choice without the float32 output projection) against the
// full float32 product followed by top_k_logprobs: the same column on every decided row, ties and
// near ties left undecided, banned columns skipped, bad values refused; and greedy search without
// scores choosing the same tokens as with them, at every instruction-set level the suite runs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "decode/search.h"
#include "ops/matmul.h"
#include "ops/packed.h"
#include "ops/screen.h"
#include "ops/top_k.h"
#include "testing/decoding.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

// The full product's choice: x · Wᵀ (+ b) in float32, then top_k_logprobs' best allowed column.
std::vector<int32_t> full_choice(const Tensor& x, const Tensor& w, const Tensor& bias,
                                 const std::vector<int32_t>& banned) {
  const int64_t R = x.size(0), V = w.size(0);
  Tensor logits = Tensor::zeros({R, V});
  ops::matmul(x, w, logits, {.trans_b = true});
  if (bias.defined())
    for (int64_t r = 0; r < R; ++r)
      for (int64_t k = 0; k < V; ++k) logits.data<float>()[r * V + k] += bias.data<float>()[k];
  Tensor logp = Tensor::empty({R, 1}, DType::F64), ids = Tensor::empty({R, 1}, DType::I32),
         lse = Tensor::empty({R}, DType::F64);
  ops::top_k_logprobs(logits, 1, banned, logp, ids, lse);
  return {ids.data<int32_t>(), ids.data<int32_t>() + R};
}

TEST(Screen, ChoosesWhatTheFullProductChooses) {
  for (bool with_bias : {false, true}) {
    for (int64_t V : {20, 1000, 9000}) {
      SCOPED_TRACE(::testing::Message() << "V " << V << ", bias " << with_bias);
      const int64_t R = 37, D = 64;
      const Tensor x = testing::random_tensor({R, D}, 11, -2, 2).to(DType::F32);
      const Tensor w = testing::random_tensor({V, D}, 12, -0.3, 0.3).to(DType::F32);
      const Tensor b = with_bias ? testing::random_tensor({V}, 13, -1, 1).to(DType::F32) : Tensor();
      const std::vector<int32_t> banned = {0, 2, static_cast<int32_t>(V - 1)};
      const ops::ScreenedProjection p = ops::screen_projection(w, b);
      std::vector<int32_t> ids;
      const ops::ScreenStats stats = ops::screened_argmax(x, p, banned, ids);
      const std::vector<int32_t> want = full_choice(x, w, b, banned);
      ASSERT_EQ(ids.size(), size_t(R));
      for (int64_t r = 0; r < R; ++r)
        if (ids[r] >= 0) EXPECT_EQ(ids[r], want[r]) << "row " << r;
      // Random logits are far apart: every row is decided, from a few candidates each.
      EXPECT_EQ(stats.undecided, 0);
      EXPECT_GE(stats.candidates, R);
      EXPECT_LE(stats.candidates, 8 * R) << "the bound is looser than it should be";
    }
  }
}

// The row's best column banned: the next one is chosen.
TEST(Screen, SkipsBannedColumns) {
  const int64_t V = 300, D = 32;
  Tensor w = testing::random_tensor({V, D}, 21, -0.1, 0.1).to(DType::F32);
  const Tensor x = testing::random_tensor({1, D}, 22, -1, 1).to(DType::F32);
  for (int64_t i = 0; i < D; ++i) {  // column 7 best by far, column 40 second
    w.data<float>()[7 * D + i] = 3 * x.data<float>()[i];
    w.data<float>()[40 * D + i] = 2 * x.data<float>()[i];
  }
  std::vector<int32_t> ids;
  ops::screened_argmax(x, ops::screen_projection(w), {}, ids);
  EXPECT_EQ(ids, std::vector<int32_t>{7});
  ops::screened_argmax(x, ops::screen_projection(w), {7}, ids);
  EXPECT_EQ(ids, std::vector<int32_t>{40});
  EXPECT_EQ(full_choice(x, w, Tensor(), {7}), std::vector<int32_t>{40});
}

// Two columns equal (a tie: the full product takes the lower) or a float32 rounding apart: too close
// to call, so the row is left to the full product; the other rows are still decided.
TEST(Screen, LeavesTiesAndNearTiesUndecided) {
  const int64_t V = 500, D = 48, R = 4;
  Tensor w = testing::random_tensor({V, D}, 31, -0.1, 0.1).to(DType::F32);
  const Tensor x = testing::random_tensor({R, D}, 32, -1, 1).to(DType::F32);
  for (int64_t i = 0; i < D; ++i) {  // row 0's best: 100 and 200 exactly tied
    w.data<float>()[100 * D + i] = w.data<float>()[200 * D + i] = 4 * x.data<float>()[i];
    // Row 1's best: 300 and 301, one float32 step apart in one weight.
    w.data<float>()[300 * D + i] = w.data<float>()[301 * D + i] = 4 * x.data<float>()[D + i];
    // Rows 2 and 3: a clear best each.
    w.data<float>()[400 * D + i] = 6 * x.data<float>()[2 * D + i];
    w.data<float>()[401 * D + i] = 6 * x.data<float>()[3 * D + i];
  }
  float& nudged = w.data<float>()[301 * D + 5];
  nudged = std::nextafter(nudged, std::copysign(INFINITY, x.data<float>()[D + 5]));
  std::vector<int32_t> ids;
  const ops::ScreenStats stats = ops::screened_argmax(x, ops::screen_projection(w), {}, ids);
  EXPECT_EQ(ids[0], -1);
  EXPECT_EQ(ids[1], -1);
  EXPECT_EQ(stats.undecided, 2);
  const std::vector<int32_t> want = full_choice(x, w, Tensor(), {});
  EXPECT_EQ(want[0], 100);  // the lower of the tie, which the caller's full product then gives
  EXPECT_EQ(ids[2], 400);
  EXPECT_EQ(ids[3], 401);
  EXPECT_EQ(want[2], 400);
  EXPECT_EQ(want[3], 401);
}

// Logits all within the bound of each other: more candidates than pay, so undecided.
TEST(Screen, FlatRowsAreLeftToTheFullProduct) {
  const int64_t V = 2 * ops::kMaxScreenCandidates + 10, D = 16;
  Tensor w = Tensor::zeros({V, D});
  for (int64_t k = 0; k < V; ++k) w.data<float>()[k * D] = 1.0f + 1e-7f * static_cast<float>(k % 3);
  const Tensor x = Tensor::from<float>({1, D}, std::vector<float>(D, 0.5f));
  std::vector<int32_t> ids;
  const ops::ScreenStats stats = ops::screened_argmax(x, ops::screen_projection(w), {}, ids);
  EXPECT_EQ(ids[0], -1);
  EXPECT_EQ(stats.undecided, 1);
}

TEST(Screen, NonFiniteValuesDecideNothing) {
  const int64_t V = 100, D = 8;
  Tensor w = testing::random_tensor({V, D}, 41).to(DType::F32);
  Tensor x = testing::random_tensor({3, D}, 42).to(DType::F32);
  x.data<float>()[D + 3] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[2 * D] = std::numeric_limits<float>::infinity();
  std::vector<int32_t> ids;
  EXPECT_EQ(ops::screened_argmax(x, ops::screen_projection(w), {}, ids).undecided, 2);
  EXPECT_GE(ids[0], 0);
  w.data<float>()[17] = std::numeric_limits<float>::quiet_NaN();
  const ops::ScreenedProjection p = ops::screen_projection(w);
  EXPECT_FALSE(p.finite);
  EXPECT_EQ(ops::screened_argmax(x, p, {}, ids).undecided, 3);
  EXPECT_EQ(ids, std::vector<int32_t>(3, -1));
  EXPECT_THROW(ops::screened_argmax(x, ops::screen_projection(testing::random_tensor({V, D}, 43).to(DType::F32)),
                                    {static_cast<int32_t>(V)}, ids),
               Error);
}

// Greedy search without scores: the screen chooses (or, on a near tie, the full product), and the
// tokens are those of the search with scores; the scores are NaN.
TEST(Screen, GreedySearchWithoutScoresChoosesTheSameTokens) {
  for (double scale : {1.0, 6.0}) {
    SCOPED_TRACE(::testing::Message() << "embedding scale " << scale);
    auto m = testing::scaled_model(300, 7, DType::F32, scale, /*pre_norm=*/scale > 2);
    m->pack_weights();
    EXPECT_FALSE(m->screens_output()) << "made only from kScreenMinVocabulary entries";
    m->screen_output();
    ASSERT_TRUE(m->screens_output());
    std::mt19937 gen(5);
    std::uniform_int_distribution<int32_t> id(4, 299), len(1, 12);
    std::vector<std::vector<int32_t>> sources(40);
    for (auto& s : sources)
      for (int i = len(gen); i > 0; --i) s.push_back(id(gen));
    SearchOptions o;
    o.beam_size = 1;
    o.max_length_a = 0;
    o.max_length_b = 14;
    o.min_length = scale > 2 ? 0 : 5;
    const std::vector<Hypothesis> with = greedy_search(*m, sources, o);
    o.return_scores = false;
    const std::vector<Hypothesis> without = greedy_search(*m, sources, o);
    for (size_t b = 0; b < sources.size(); ++b) {
      EXPECT_EQ(without[b].tokens, with[b].tokens) << "sentence " << b;
      EXPECT_TRUE(std::isnan(without[b].score) && std::isnan(without[b].normalized)) << "sentence " << b;
      EXPECT_FALSE(std::isnan(with[b].score)) << "sentence " << b;
    }
    // The decoder's output for a step, through the screen and through the full product.
    const Batch batch = make_batch(sources, std::vector<std::vector<int32_t>>(sources.size()), m->config());
    const Context ctx = m->context();
    DecodeState state = m->start_decoding(ctx, m->encode(ctx, batch.src, batch.src_lengths, nullptr), batch.src_lengths, 4);
    const Tensor hidden = m->decode_hidden(m->context(), state, Tensor::from<int32_t>({40}, std::vector<int32_t>(40, 2)));
    std::vector<int32_t> ids;
    ASSERT_TRUE(m->screened_argmax(m->context(), state, hidden, {0, 2}, ids));
    const Tensor logits = m->project_step(m->context(), state, hidden);
    Tensor logp = Tensor::empty({40, 1}, DType::F64), best = Tensor::empty({40, 1}, DType::I32),
           lse = Tensor::empty({40}, DType::F64);
    ops::top_k_logprobs(logits, 1, {0, 2}, logp, best, lse);
    EXPECT_EQ(ids, std::vector<int32_t>(best.data<int32_t>(), best.data<int32_t>() + 40));
  }
}

}  // namespace
}  // namespace tfm
