// The per-element ops of the model family: RMSNorm (ops/rms_norm.h), rotary position embedding
// (ops/rotary.h) and gated activations (ops/gated.h). Each forward against its definition computed
// here in float64, each backward against finite differences, and their argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "ops/elementwise.h"
#include "ops/gated.h"
#include "ops/rms_norm.h"
#include "ops/rotary.h"
#include "testing/errors.h"
#include "testing/fixture.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

using ops::Activation;
using testing::expect_error;
using testing::random_tensor;
using testing::weighted_sum;

double at(const Tensor& t, int64_t i) { return t.to_doubles()[static_cast<size_t>(i)]; }

// ---- RMSNorm ----

// y = x / sqrt(mean(x²) + eps) · gamma, row by row, and each row's 1 / sqrt(mean(x²) + eps).
std::pair<Tensor, Tensor> rms_norm_reference(const Tensor& x, const Tensor& gamma, double eps) {
  const int64_t d = x.size(-1), rows = x.shape().rows();
  Tensor y = Tensor::zeros(x.shape(), DType::F64), rstd = Tensor::zeros({rows}, DType::F64);
  const std::vector<double> xs = x.to_doubles(), g = gamma.to_doubles();
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += xs[r * d + i] * xs[r * d + i];
    const double rs = 1 / std::sqrt(ss / d + eps);
    for (int64_t i = 0; i < d; ++i) y.data<double>()[r * d + i] = xs[r * d + i] * rs * g[i];
    rstd.data<double>()[r] = rs;
  }
  return {y, rstd};
}

TEST(RmsNorm, MatchesTheDefinitionInBothDtypes) {
  const Tensor x = random_tensor({2, 3, 37}, 1, -3, 3), gamma = random_tensor({37}, 2, 0.5, 1.5);
  const auto [want_y, want_rstd] = rms_norm_reference(x, gamma, 1e-5);
  for (DType dt : {DType::F64, DType::F32}) {
    SCOPED_TRACE(name(dt));
    const Tensor xt = x.to(dt), y = Tensor::empty(x.shape(), dt), rstd = Tensor::empty({6}, dt);
    ops::rms_norm(xt, gamma.to(dt), 1e-5, y, rstd);
    const double tol = dt == DType::F64 ? 1e-14 : 1e-6;
    EXPECT_TRUE(testing::all_close(y, want_y, tol, tol));
    EXPECT_TRUE(testing::all_close(rstd, want_rstd, tol, tol));
    ops::rms_norm(xt, gamma.to(dt), 1e-5, xt, rstd);  // in place
    EXPECT_TRUE(testing::all_close(xt, y, 0, 0));
  }
}

// No mean is subtracted: a constant row c normalizes to sign(c)·gamma (up to eps), not to 0.
TEST(RmsNorm, KeepsTheMean) {
  Tensor x = Tensor::zeros({1, 4}, DType::F64);
  x.fill(-2.5);
  const Tensor gamma = random_tensor({4}, 3), y = Tensor::empty({1, 4}, DType::F64), rstd = Tensor::empty({1}, DType::F64);
  ops::rms_norm(x, gamma, 1e-12, y, rstd);
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(at(y, i), -at(gamma, i), 1e-9);
}

TEST(RmsNorm, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const Tensor x = random_tensor({4, 9}, 4, -2, 2), gamma = random_tensor({9}, 5, 0.5, 1.5);
  const Tensor w = random_tensor({4, 9}, 6), y = Tensor::empty({4, 9}, DType::F64);
  const Tensor rstd = Tensor::empty({4}, DType::F64);
  auto loss = [&] {
    ops::rms_norm(x, gamma, 1e-5, y, rstd);
    return weighted_sum(y, w);
  };
  loss();
  Tensor dx = Tensor::zeros(x.shape(), DType::F64), dgamma = Tensor::zeros({9}, DType::F64);
  ops::rms_norm_backward(w, x, gamma, rstd, dx, dgamma);
  testing::expect_gradients_match(loss, {{"x", x, dx}, {"gamma", gamma, dgamma}});
  // dx += ..., dgamma += ...: a second call doubles both.
  const Tensor dx1 = dx.clone(), dgamma1 = dgamma.clone();
  ops::rms_norm_backward(w, x, gamma, rstd, dx, dgamma);
  ops::scale(dx1, 2, dx1);
  ops::scale(dgamma1, 2, dgamma1);
  EXPECT_TRUE(testing::all_close(dx, dx1, 1e-14, 1e-14));
  EXPECT_TRUE(testing::all_close(dgamma, dgamma1, 1e-14, 1e-14));
}

TEST(RmsNorm, RefusesBadArguments) {
  const Tensor x = Tensor::zeros({3, 4}), y = Tensor::zeros({3, 4}), rstd = Tensor::zeros({3});
  expect_error([&] { ops::rms_norm(x, Tensor::zeros({5}), 1e-5, y, rstd); }, {"rms_norm", "gamma", "[5]", "[4]"});
  expect_error([&] { ops::rms_norm(x, Tensor::zeros({4}), 0, y, rstd); }, {"eps must be positive", "0"});
  expect_error([&] { ops::rms_norm(x, Tensor::zeros({4}), 1e-5, y, Tensor::zeros({2})); }, {"rstd", "3 elements"});
  expect_error([&] { ops::rms_norm(x, Tensor::zeros({4}, DType::F64), 1e-5, y, rstd); }, {"gamma", "float64"});
  expect_error([&] { ops::rms_norm_backward(x, x, Tensor::zeros({4}), rstd, y, Tensor::zeros({5})); },
               {"rms_norm_backward", "dgamma"});
}

// ---- Rotary position embedding ----

// The definition, element by element: head h of token (b, t) at position p = start + t + offsets[b],
// pair i = (i, i + r/2) or (2i, 2i+1) turned by p·θ^(−2i/r) (by its negative when inverse).
Tensor rotary_reference(const Tensor& x, int64_t heads, const ops::Rotary& rope, int64_t start,
                        const std::vector<int>& offsets, bool inverse) {
  const int64_t B = x.size(0), T = x.size(1), W = x.size(2), d = W / heads, half = rope.dims / 2;
  const std::vector<double> xs = x.to_doubles();
  Tensor y = Tensor::from(x.shape(), xs);
  double* out = y.data<double>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const double p = double(start + t + (offsets.empty() ? 0 : offsets[b]));
          const double angle = (inverse ? -p : p) * std::pow(rope.theta, -2.0 * i / rope.dims);
          const int64_t base = (b * T + t) * W + h * d;
          const int64_t j0 = base + (rope.interleaved ? 2 * i : i);
          const int64_t j1 = base + (rope.interleaved ? 2 * i + 1 : i + half);
          out[j0] = xs[j0] * std::cos(angle) - xs[j1] * std::sin(angle);
          out[j1] = xs[j0] * std::sin(angle) + xs[j1] * std::cos(angle);
        }
  return y;
}

Tensor rotated(const Tensor& x, int64_t heads, const ops::Rotary& rope, int64_t start, const Tensor& offsets,
               bool inverse = false) {
  const Tensor out = Tensor::empty(x.shape(), x.dtype());
  ops::rotary(x, heads, rope, start, offsets, inverse, out);
  return out;
}

struct RopeCase {
  int64_t dims;
  bool interleaved;
};
void PrintTo(const RopeCase& c, std::ostream* os) {
  *os << "dims " << c.dims << (c.interleaved ? ", interleaved" : ", half-split");
}

class RotaryLayouts : public ::testing::TestWithParam<RopeCase> {
 protected:
  ops::Rotary rope() const { return {GetParam().dims, 500.0, GetParam().interleaved}; }
};

// 3 heads of width 8: every dim rotated (dims 8) or the first 4 and 6 with the rest passed through.
TEST_P(RotaryLayouts, MatchesTheDefinitionWithOffsets) {
  const Tensor x = random_tensor({2, 5, 24}, 10, -2, 2);
  const std::vector<int> shift = {3, -2};
  const Tensor offsets = Tensor::from<int32_t>({2}, {3, -2});
  for (bool inverse : {false, true}) {
    const Tensor want = rotary_reference(x, 3, rope(), 7, shift, inverse);
    EXPECT_TRUE(testing::all_close(rotated(x, 3, rope(), 7, offsets, inverse), want, 1e-14, 1e-14)) << inverse;
    EXPECT_TRUE(testing::all_close(rotated(x.to(DType::F32), 3, rope(), 7, offsets, inverse), want, 1e-6, 1e-6));
  }
  // Without offsets: positions start + t.
  EXPECT_TRUE(testing::all_close(rotated(x, 3, rope(), 4, Tensor()), rotary_reference(x, 3, rope(), 4, {}, false),
                                 1e-14, 1e-14));
}

TEST_P(RotaryLayouts, InverseUndoesForwardInPlace) {
  for (DType dt : {DType::F64, DType::F32}) {
    const Tensor x = random_tensor({3, 4, 16}, 11).to(dt), y = x.clone();
    const Tensor offsets = Tensor::from<int32_t>({3}, {0, 100, 12345});
    ops::rotary(y, 2, rope(), 9, offsets, false, y);
    EXPECT_FALSE(testing::all_close(y, x, 1e-3, 1e-3));
    ops::rotary(y, 2, rope(), 9, offsets, true, y);
    const double tol = dt == DType::F64 ? 1e-14 : 1e-6;
    EXPECT_TRUE(testing::all_close(y, x, tol, tol)) << name(dt);
  }
}

// The dims past `dims` of each head come out exactly as they went in; at position 0 every dim does.
TEST_P(RotaryLayouts, PassesTheRestThroughAndPositionZeroIsTheIdentity) {
  const Tensor x = random_tensor({2, 3, 16}, 12).to(DType::F32);
  const Tensor y = rotated(x, 2, rope(), 5, Tensor());
  for (int64_t row = 0; row < 2 * 3 * 2; ++row)
    for (int64_t j = rope().dims; j < 8; ++j) ASSERT_EQ(at(y, row * 8 + j), at(x, row * 8 + j)) << row << ", " << j;
  const Tensor first = x.view({2 * 3, 1, 16});  // one token each, at position 0
  EXPECT_TRUE(testing::all_close(rotated(first, 2, rope(), 0, Tensor()), first, 0, 0));
}

// dL/dx of L = Σ w ⊙ rotary(x) is rotary(w, inverse): the map is orthogonal.
TEST_P(RotaryLayouts, InverseIsTheBackward) {
  const Tensor x = random_tensor({2, 3, 16}, 13), w = random_tensor({2, 3, 16}, 14);
  const Tensor offsets = Tensor::from<int32_t>({2}, {1, 6});
  const Tensor dx = rotated(w, 2, rope(), 2, offsets, true);
  testing::expect_gradients_match([&] { return weighted_sum(rotated(x, 2, rope(), 2, offsets), w); }, {{"x", x, dx}});
}

INSTANTIATE_TEST_SUITE_P(Rotary, RotaryLayouts,
                         ::testing::Values(RopeCase{8, false}, RopeCase{8, true}, RopeCase{4, false},
                                           RopeCase{6, true}),
                         [](const auto& info) {
                           return std::string(info.param.interleaved ? "interleaved" : "half") + "_dims" +
                                  std::to_string(info.param.dims);
                         });

// Offsets shift each batch entry's positions: entry b equals a batch of one starting at start + offsets[b].
TEST(Rotary, OffsetsShiftEachBatchEntry) {
  const ops::Rotary rope{8, 10000.0, false};
  const Tensor x = random_tensor({3, 4, 8}, 15), offsets = Tensor::from<int32_t>({3}, {0, 5, 40});
  const Tensor y = rotated(x, 1, rope, 2, offsets);
  for (int64_t b = 0; b < 3; ++b) {
    const Tensor alone = rotated(x.rows(b, 1), 1, rope, 2 + std::vector<int>{0, 5, 40}[b], Tensor());
    EXPECT_TRUE(testing::all_close(y.rows(b, 1), alone, 0, 0)) << b;
  }
}

// Far positions in float32 stay as accurate as near ones: the angle p·θ^(−2i/r) at p = 10⁶ rounded to
// float would be off by up to 0.03 rad.
TEST(Rotary, FarPositionsKeepTheirAccuracyInFloat32) {
  const ops::Rotary rope{16, 10000.0, false};
  const Tensor x = random_tensor({1, 3, 16}, 16);
  const Tensor want = rotary_reference(x, 1, rope, 1000000, {}, false);
  EXPECT_TRUE(testing::all_close(rotated(x.to(DType::F32), 1, rope, 1000000, Tensor()), want, 1e-6, 1e-6));
}

TEST(Rotary, RefusesBadArguments) {
  const Tensor x = Tensor::zeros({2, 3, 16}), out = Tensor::zeros({2, 3, 16});
  auto call = [&](int64_t heads, ops::Rotary rope, int64_t start = 0, const Tensor& offsets = Tensor()) {
    return [=] { ops::rotary(x, heads, rope, start, offsets, false, out); };
  };
  expect_error(call(2, {5, 10000, false}), {"dims = 5", "even", "head width 8"});
  expect_error(call(2, {10, 10000, false}), {"dims = 10", "head width 8"});
  expect_error(call(2, {0, 10000, false}), {"dims = 0"});
  expect_error(call(2, {8, 0, false}), {"theta must be positive", "0"});
  expect_error(call(2, {8, -1, false}), {"theta", "-1"});
  expect_error(call(2, {8, NAN, false}), {"theta", "nan"});
  expect_error(call(3, {4, 10000, false}), {"heads_x = 3", "16"});
  expect_error(call(0, {4, 10000, false}), {"heads_x = 0"});
  expect_error(call(2, {8, 10000, false}, -1), {"start", "-1"});
  expect_error(call(2, {8, 10000, false}, 0, Tensor::zeros({3}, DType::I32)), {"offsets", "[3]", "[2]"});
  expect_error(call(2, {8, 10000, false}, 0, Tensor::zeros({2})), {"offsets", "float32"});
  expect_error([&] { ops::rotary(Tensor::zeros({6, 16}), 2, {8, 10000, false}, 0, Tensor(), false, out); },
               {"rotary", "[6, 16]"});
  expect_error([&] { ops::rotary(x, 2, {8, 10000, false}, 0, Tensor(), false, Tensor::zeros({2, 3, 8})); },
               {"rotary", "out"});
}

// ---- Gated activations ----

double activation_reference(Activation a, double x) {
  switch (a) {
    case Activation::kNone: return x;
    case Activation::kRelu: return x > 0 ? x : 0;
    case Activation::kSwish: return x / (1 + std::exp(-x));
    case Activation::kGelu: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case Activation::kGeluSigmoid: return x / (1 + std::exp(-1.702 * x));
    case Activation::kGeluTanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return 0;
}

constexpr Activation kActivations[] = {Activation::kNone,  Activation::kRelu,        Activation::kSwish,
                                       Activation::kGelu, Activation::kGeluSigmoid, Activation::kGeluTanh};

class Gated : public ::testing::TestWithParam<Activation> {};

// hidden[n, i] = act(pre[n, i]) · pre[n, F + i].
TEST_P(Gated, MatchesTheDefinitionInBothDtypes) {
  const Activation act = GetParam();
  const Tensor pre = random_tensor({2, 3, 2 * 11}, 20, -4, 4);
  Tensor want = Tensor::zeros({2, 3, 11}, DType::F64);
  const std::vector<double> p = pre.to_doubles();
  for (int64_t n = 0; n < 6; ++n)
    for (int64_t i = 0; i < 11; ++i)
      want.data<double>()[n * 11 + i] = activation_reference(act, p[n * 22 + i]) * p[n * 22 + 11 + i];
  for (DType dt : {DType::F64, DType::F32}) {
    const Tensor hidden = Tensor::empty({2, 3, 11}, dt);
    ops::gated(pre.to(dt), act, hidden);
    const double tol = dt == DType::F64 ? 1e-12 : 2e-6;
    EXPECT_TRUE(testing::all_close(hidden, want, tol, tol)) << name(dt);
  }
}

TEST_P(Gated, BackwardMatchesFiniteDifferencesAndMayOverwritePre) {
  const Activation act = GetParam();
  Tensor pre = random_tensor({5, 2 * 7}, 21, -3, 3);
  for (int64_t i = 0; i < pre.numel(); ++i)  // off ReLU's kink at 0
    if (std::abs(pre.data<double>()[i]) < 0.01) pre.data<double>()[i] = 0.5;
  const Tensor w = random_tensor({5, 7}, 22), hidden = Tensor::empty({5, 7}, DType::F64);
  Tensor dpre = Tensor::empty(pre.shape(), DType::F64);
  dpre.fill(123);  // written, not accumulated
  ops::gated_backward(w, pre, act, dpre);
  testing::expect_gradients_match([&] {
    ops::gated(pre, act, hidden);
    return weighted_sum(hidden, w);
  }, {{"pre", pre, dpre}});
  const Tensor in_place = pre.clone();
  ops::gated_backward(w, in_place, act, in_place);
  EXPECT_TRUE(testing::all_close(in_place, dpre, 0, 0));
  // Float32 against the float64 gradient.
  const Tensor dpre32 = Tensor::empty(pre.shape());
  ops::gated_backward(w.to(DType::F32), pre.to(DType::F32), act, dpre32);
  EXPECT_TRUE(testing::all_close(dpre32, dpre, 1e-5, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Activation, Gated, ::testing::ValuesIn(kActivations),
                         [](const auto& info) { return std::string(ops::activation_name(info.param)); });

TEST(GatedArguments, RefusesBadShapes) {
  expect_error([] { ops::gated(Tensor::zeros({3, 7}), Activation::kSwish, Tensor::zeros({3, 3})); },
               {"gated", "even", "[3, 7]"});
  expect_error([] { ops::gated(Tensor::zeros({3, 8}), Activation::kSwish, Tensor::zeros({3, 8})); },
               {"hidden", "[3, 8]", "expected [3, 4]"});
  expect_error([] { ops::gated_backward(Tensor::zeros({3, 4}), Tensor::zeros({3, 8}), Activation::kGelu,
                                        Tensor::zeros({3, 4})); },
               {"gated_backward", "dpre"});
  expect_error([] { ops::gated(Tensor::zeros({3, 8}), Activation::kSwish, Tensor::zeros({3, 4}, DType::F64)); },
               {"hidden", "float64"});
}

}  // namespace
}  // namespace tfm
