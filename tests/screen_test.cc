// ops::screened_argmax (greedy search's choice without the float32 output projection) against the
// full float32 product followed by top_k_logprobs: the same column on every decided row, ties and
// near ties left undecided, banned columns skipped, bad values refused; and greedy search without
// scores choosing the same tokens as with them, at every instruction-set level the suite runs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>

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

// The bounds screened_argmax decides with, against the measured errors of both products, with each
// quantization error alone: weights on the int8 grid (only the activations' error is left), then
// activations on it (only the weights'), then neither, with a bias.
TEST(Screen, BoundsHoldForEachErrorAlone) {
  const int levels = ops::int8_activation_levels();
  std::mt19937 gen(17);
  std::uniform_int_distribution<int> wq(-127, 127), xq(-levels, levels), exponent(2, 9);
  for (int64_t D : {48, 512}) {
    for (int which : {0, 1, 2}) {
      SCOPED_TRACE(::testing::Message() << "D " << D << (which == 0 ? ", weights on the grid"
                                                        : which == 1 ? ", activations on the grid" : ", neither"));
      const int64_t R = 24, V = 150;
      Tensor w = testing::random_tensor({V, D}, 51 + which, -0.2, 0.2).to(DType::F32);
      Tensor x = testing::random_tensor({R, D}, 61 + which, -3, 3).to(DType::F32);
      if (which == 0)  // w_k = 2^-e · q, q integers with max |q| = 127: quantize_rows gives them back
        for (int64_t k = 0; k < V; ++k) {
          const float scale = std::ldexp(1.0f, -exponent(gen));
          for (int64_t i = 0; i < D; ++i) w.data<float>()[k * D + i] = scale * float(i == k % D ? 127 : wq(gen));
        }
      if (which == 1)  // x = 2^-e · q, max |q| = L: quantize_activations gives them back
        for (int64_t r = 0; r < R; ++r) {
          const float scale = std::ldexp(1.0f, -exponent(gen));
          for (int64_t i = 0; i < D; ++i) x.data<float>()[r * D + i] = scale * float(i == r % D ? -levels : xq(gen));
        }
      const Tensor b = which == 2 ? testing::random_tensor({V}, 71, -5, 5).to(DType::F32) : Tensor();
      const ops::ScreenedProjection p = ops::screen_projection(w, b);
      if (which == 0) {
        EXPECT_LT(p.max_error_norm, 1e-200) << "the weights were not on the int8 grid";
      }
      Tensor approx = Tensor::zeros({R, V}), f32 = Tensor::zeros({R, V});
      ops::matmul_int8(x, p.q, approx, b);
      ops::matmul(x, w, f32, {.trans_b = true});
      double worst_int8 = 0, worst_f32 = 0;  // the largest error as a share of its bound
      for (int64_t r = 0; r < R; ++r) {
        const ops::ScreenBounds bound = ops::screen_bounds(x.data<float>() + r * D, D, p);
        ASSERT_TRUE(bound.finite);
        for (int64_t k = 0; k < V; ++k) {
          long double exact = b.defined() ? b.data<float>()[k] : 0.0f;
          for (int64_t i = 0; i < D; ++i)
            exact += static_cast<long double>(x.data<float>()[r * D + i]) * w.data<float>()[k * D + i];
          const double e = static_cast<double>(exact);
          const float f = f32.data<float>()[r * V + k] + (b.defined() ? b.data<float>()[k] : 0.0f);
          worst_int8 = std::max(worst_int8, std::abs(approx.data<float>()[r * V + k] - e) / bound.int8);
          worst_f32 = std::max(worst_f32, std::abs(f - e) / bound.float32);
          EXPECT_LE(std::abs(e), bound.limit);
        }
      }
      EXPECT_LE(worst_int8, 1.0);
      EXPECT_LE(worst_f32, 1.0);
      // The quantization error left is a real share of its bound (Cauchy–Schwarz's looseness, about
      // √D at worst): a bound missing that error would fail the check above.
      if (which != 2) {
        EXPECT_GE(worst_int8, 0.3 / std::sqrt(double(D))) << "the measured error is too small to test the bound";
      }
    }
  }
}

// Pairs of columns a gap apart, from 10⁻⁹ to 10⁻¹ of the logit, each the best of its row: where the
// int8 error hides the gap the double recomputation decides; where float32 rounding could hide it
// the row is left undecided; every decided row agrees with the full product.
TEST(Screen, DecidesOnlyWhatTheFullProductWouldChoose) {
  const int64_t R = 160, D = 64, V = 2 * R + 50;
  const Tensor x = testing::random_tensor({R, D}, 81, -1, 1).to(DType::F32);
  Tensor w = testing::random_tensor({V, D}, 82, -0.05, 0.05).to(DType::F32);
  std::vector<double> gap(R);
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x.data<float>() + r * D;
    float* a = w.data<float>() + (50 + 2 * r) * D;
    float* c = a + D;
    double norm2 = 0;
    for (int64_t i = 0; i < D; ++i) norm2 += double(xr[i]) * xr[i];
    for (int64_t i = 0; i < D; ++i) a[i] = c[i] = static_cast<float>(3 * xr[i] / norm2);  // logit ≈ 3
    // c gets the gap through its largest weight's partner in x: relative 10^-9 … 10^-1.
    const double rel = std::pow(10.0, -9.0 + 8.0 * double(r) / double(R - 1));
    int64_t j = 0;
    for (int64_t i = 1; i < D; ++i) j = std::abs(xr[i]) > std::abs(xr[j]) ? i : j;
    c[j] = static_cast<float>(c[j] + (r % 2 ? 1 : -1) * 3 * rel / xr[j]);
    gap[r] = 0;
    for (int64_t i = 0; i < D; ++i) gap[r] += double(xr[i]) * (double(c[i]) - double(a[i]));
  }
  const ops::ScreenedProjection p = ops::screen_projection(w);
  std::vector<int32_t> ids;
  ops::screened_argmax(x, p, {}, ids);
  const std::vector<int32_t> want = full_choice(x, w, Tensor(), {});
  int64_t decided = 0;
  for (int64_t r = 0; r < R; ++r) {
    SCOPED_TRACE(::testing::Message() << "row " << r << ", gap " << gap[r]);
    const ops::ScreenBounds bound = ops::screen_bounds(x.data<float>() + r * D, D, p);
    if (ids[r] >= 0) {
      ++decided;
      EXPECT_EQ(ids[r], want[r]);
      EXPECT_GT(std::abs(gap[r]), 2 * bound.float32 - 1e-9) << "decided inside float32's rounding";
    } else {
      EXPECT_LT(std::abs(gap[r]), 2.5 * bound.float32 + 1e-12) << "a clear gap left undecided";
    }
  }
  EXPECT_GT(decided, R / 3);
  EXPECT_LT(decided, R) << "no row came close enough to be undecided";
}

TEST(Screen, ChoosesWhatTheFullProductChooses) {
  for (bool with_bias : {false, true}) {
    for (auto [V, D, R] : {std::tuple<int64_t, int64_t, int64_t>{20, 64, 37}, {1000, 64, 37}, {9000, 64, 37},
                           {1000, 30, 300}}) {
      // D = 30: no panels (oneDNN); 300 rows: the int8 product in one piece (rows > 256).
      SCOPED_TRACE(::testing::Message() << "V " << V << ", D " << D << ", R " << R << ", bias " << with_bias);
      Tensor x = testing::random_tensor({R, D}, 11, -2, 2).to(DType::F32);
      for (int64_t i = 0; i < D; ++i) x.data<float>()[5 * D + i] = 0;  // a row of zeros: logits 0 (+ b)
      const Tensor w = testing::random_tensor({V, D}, 12, -0.3, 0.3).to(DType::F32);
      const Tensor b = with_bias ? testing::random_tensor({V}, 13, -1, 1).to(DType::F32) : Tensor();
      const std::vector<int32_t> banned = {0, 2, static_cast<int32_t>(V - 1)};
      const ops::ScreenedProjection p = ops::screen_projection(w, b);
      std::vector<int32_t> ids;
      const ops::ScreenStats stats = ops::screened_argmax(x, p, banned, ids);
      const std::vector<int32_t> want = full_choice(x, w, b, banned);
      ASSERT_EQ(ids.size(), size_t(R));
      for (int64_t r = 0; r < R; ++r)
        if (ids[r] >= 0) {
          EXPECT_EQ(ids[r], want[r]) << "row " << r;
        }
      // Random logits are far apart: every row is decided, from a few candidates each, but the row
      // of zeros without a bias (all its logits 0: a tie of every column).
      const int64_t tied = with_bias ? 0 : 1;
      EXPECT_EQ(stats.undecided, tied);
      if (tied) {
        EXPECT_EQ(ids[5], -1);
      }
      EXPECT_GE(stats.candidates, R - tied);
      EXPECT_LE(stats.candidates, 8 * R + tied * V) << "the bound is looser than it should be";
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

// Logits beyond float32's range (the float32 product overflows) are not decided either.
TEST(Screen, LogitsNearFloat32sLimitDecideNothing) {
  const Tensor w = testing::random_tensor({50, 16}, 45).to(DType::F32);
  const Tensor x = Tensor::from<float>({1, 16}, std::vector<float>(16, 1e37f));
  std::vector<int32_t> ids;
  EXPECT_EQ(ops::screened_argmax(x, ops::screen_projection(w), {}, ids).undecided, 1);
  EXPECT_EQ(ids[0], -1);
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
    // Not with a shortlist's restricted output (its columns are other tokens).
    DecodeState restricted = state;
    m->restrict_output(ctx, restricted, {3, 7, 9});
    EXPECT_FALSE(m->screened_argmax(ctx, restricted, hidden, {}, ids));
    Tensor logp = Tensor::empty({40, 1}, DType::F64), best = Tensor::empty({40, 1}, DType::I32),
           lse = Tensor::empty({40}, DType::F64);
    ops::top_k_logprobs(logits, 1, {0, 2}, logp, best, lse);
    EXPECT_EQ(ids, std::vector<int32_t>(best.data<int32_t>(), best.data<int32_t>() + 40));
    // int8 weights: their own products, no screen.
    m->quantize_int8();
    EXPECT_FALSE(m->screens_output());
  }
}

}  // namespace
}  // namespace tfm
