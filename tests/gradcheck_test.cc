// Every backward against central finite differences in double precision, on random inputs of odd
// sizes. Each test builds L = Σ w ⊙ forward(inputs), runs the backward with dy = w, and lets
// expect_gradients_match nudge every input element.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/positional.h"
#include "ops/softmax.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

using testing::expect_gradients_match;
using testing::random_tensor;
using testing::weighted_sum;

Tensor zeros64(const Shape& s) { return Tensor::zeros(s, DType::F64); }

struct MatmulCase {
  Shape a, b, c;
  bool trans_a, trans_b;
};

void PrintTo(const MatmulCase& c, std::ostream* os) {
  *os << "A" << c.a << (c.trans_a ? "ᵀ" : "") << " · B" << c.b << (c.trans_b ? "ᵀ" : "");
}

class MatmulGradTest : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulGradTest, MatchesFiniteDifferences) {
  const MatmulCase& mc = GetParam();
  const ops::MatmulArgs args{mc.trans_a, mc.trans_b, 0.75f, 0.0f};
  Tensor a = random_tensor(mc.a, 1), b = random_tensor(mc.b, 2), w = random_tensor(mc.c, 3);
  Tensor c = zeros64(mc.c);
  auto loss = [&] {
    ops::matmul(a, b, c, args);
    return weighted_sum(c, w);
  };
  Tensor da = zeros64(mc.a), db = zeros64(mc.b);
  loss();
  ops::matmul_backward(a, b, w, &da, &db, args);
  expect_gradients_match(loss, {{"A", a, da}, {"B", b, db}});
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulGradTest,
    ::testing::Values(MatmulCase{{7, 5}, {5, 3}, {7, 3}, false, false}, MatmulCase{{5, 7}, {5, 3}, {7, 3}, true, false},
                      MatmulCase{{7, 5}, {3, 5}, {7, 3}, false, true}, MatmulCase{{5, 7}, {3, 5}, {7, 3}, true, true},
                      // batched: one product per leading index (heads)
                      MatmulCase{{3, 7, 5}, {3, 5, 4}, {3, 7, 4}, false, false},
                      MatmulCase{{3, 5, 7}, {3, 4, 5}, {3, 7, 4}, true, true},
                      // a weight [out, in] applied to every row of [B, T, in]: x · Wᵀ
                      MatmulCase{{2, 7, 5}, {4, 5}, {2, 7, 4}, false, true}));

TEST(GradCheck, AddAndScale) {
  Tensor a = random_tensor({7, 13}, 1), b = random_tensor({7, 13}, 2), w = random_tensor({7, 13}, 3);
  Tensor y = zeros64({7, 13});
  auto loss = [&] {
    ops::add(a, b, y);
    ops::scale(y, -1.5, y);
    return weighted_sum(y, w);
  };
  loss();
  // y = −1.5 (a + b): dy/da = dy/db = −1.5 · w, through scale then add's identity.
  Tensor g = zeros64({7, 13}), da = zeros64({7, 13}), db = zeros64({7, 13});
  ops::scale(w, -1.5, g);
  ops::add_to(g, da);
  ops::add_to(g, db);
  expect_gradients_match(loss, {{"a", a, da}, {"b", b, db}});
}

TEST(GradCheck, BiasAdd) {
  Tensor x = random_tensor({3, 7, 13}, 1), bias = random_tensor({13}, 2), w = random_tensor({3, 7, 13}, 3);
  Tensor y = zeros64({3, 7, 13});
  auto loss = [&] {
    ops::bias_add(x, bias, y);
    return weighted_sum(y, w);
  };
  loss();
  Tensor dx = zeros64(x.shape()), dbias = zeros64(bias.shape());
  ops::add_to(w, dx);
  ops::bias_add_backward(w, dbias);
  expect_gradients_match(loss, {{"x", x, dx}, {"bias", bias, dbias}});
}

TEST(GradCheck, Relu) {
  // Inputs kept away from the kink at 0, where the derivative does not exist.
  Tensor x = random_tensor({7, 13}, 1, 0.05, 1.0), sign = random_tensor({7, 13}, 4);
  for (int64_t i = 0; i < x.numel(); ++i)
    if (sign.data<double>()[i] < 0) x.data<double>()[i] = -x.data<double>()[i];
  Tensor w = random_tensor({7, 13}, 3), y = zeros64({7, 13});
  auto loss = [&] {
    ops::relu(x, y);
    return weighted_sum(y, w);
  };
  loss();
  Tensor dx = zeros64(x.shape());
  ops::relu_backward(y, w, dx);
  expect_gradients_match(loss, {{"x", x, dx}});
}

TEST(GradCheck, Dropout) {
  Tensor x = random_tensor({7, 13}, 1), w = random_tensor({7, 13}, 3), y = zeros64({7, 13});
  const RngStream rng{42, 7};
  auto loss = [&] {
    ops::dropout(x, 0.3, rng, y);
    return weighted_sum(y, w);
  };
  loss();
  // The backward as the layers run it: the same call on the gradient, with the same stream.
  Tensor dx = zeros64(x.shape());
  ops::dropout(w, 0.3, rng, dx);
  expect_gradients_match(loss, {{"x", x, dx}});
}

TEST(GradCheck, LayerNorm) {
  Tensor x = random_tensor({7, 13}, 1, -2, 2), gamma = random_tensor({13}, 2, 0.5, 1.5),
         beta = random_tensor({13}, 3), w = random_tensor({7, 13}, 4);
  Tensor y = zeros64({7, 13}), mean = zeros64({7}), rstd = zeros64({7});
  auto loss = [&] {
    ops::layer_norm(x, gamma, beta, 1e-5, y, mean, rstd);
    return weighted_sum(y, w);
  };
  loss();
  Tensor dx = zeros64(x.shape()), dgamma = zeros64({13}), dbeta = zeros64({13});
  ops::layer_norm_backward(w, x, gamma, mean, rstd, dx, dgamma, dbeta);
  expect_gradients_match(loss, {{"x", x, dx}, {"gamma", gamma, dgamma}, {"beta", beta, dbeta}});
}

TEST(GradCheck, Softmax) {
  Tensor x = random_tensor({7, 13}, 1, -3, 3), w = random_tensor({7, 13}, 2), y = zeros64({7, 13});
  auto loss = [&] {
    ops::softmax(x, y);
    return weighted_sum(y, w);
  };
  loss();
  Tensor dx = zeros64(x.shape());
  ops::softmax_backward(y, w, dx);
  expect_gradients_match(loss, {{"x", x, dx}});
}

struct AttentionCase {
  const char* name;
  int64_t batch, queries, keys, heads, d_k, d_v;
  bool causal;
  std::vector<int32_t> key_lengths;  // empty: no padding
  double dropout;
};

void PrintTo(const AttentionCase& c, std::ostream* os) { *os << c.name; }

class AttentionGradTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionGradTest, MatchesFiniteDifferences) {
  const AttentionCase& ac = GetParam();
  const int64_t B = ac.batch, T = ac.queries, S = ac.keys, H = ac.heads;
  Tensor q = random_tensor({B, T, H * ac.d_k}, 1), k = random_tensor({B, S, H * ac.d_k}, 2),
         v = random_tensor({B, S, H * ac.d_v}, 3), w = random_tensor({B, T, H * ac.d_v}, 4);
  ops::AttentionArgs args;
  args.heads = static_cast<int>(H);
  args.causal = ac.causal;
  if (!ac.key_lengths.empty()) args.key_lengths = Tensor::from<int32_t>({B}, ac.key_lengths);
  args.dropout = ac.dropout;
  args.rng = RngStream{5, 9};
  Tensor probs = zeros64({B, H, T, S}), out = zeros64({B, T, H * ac.d_v});
  auto loss = [&] {
    ops::attention(q, k, v, args, probs, out);
    return weighted_sum(out, w);
  };
  loss();
  Tensor dq = zeros64(q.shape()), dk = zeros64(k.shape()), dv = zeros64(v.shape());
  ops::attention_backward(q, k, v, args, probs, w, dq, dk, dv);
  expect_gradients_match(loss, {{"q", q, dq}, {"k", k, dk}, {"v", v, dv}});
}

INSTANTIATE_TEST_SUITE_P(
    Masks, AttentionGradTest,
    ::testing::Values(AttentionCase{"plain", 2, 5, 7, 3, 4, 2, false, {}, 0.0},
                      AttentionCase{"padding", 2, 5, 7, 3, 4, 4, false, {7, 4}, 0.0},
                      AttentionCase{"causal", 2, 5, 5, 3, 4, 4, true, {}, 0.0},
                      AttentionCase{"causal_padding", 2, 5, 5, 3, 4, 4, true, {5, 3}, 0.0},
                      // a sentence whose keys are all masked: zero output, zero gradient
                      AttentionCase{"all_masked", 2, 5, 7, 3, 4, 4, false, {0, 6}, 0.0},
                      AttentionCase{"dropout", 2, 5, 7, 3, 4, 4, true, {7, 5}, 0.2}),
    [](const ::testing::TestParamInfo<AttentionCase>& info) { return std::string(info.param.name); });

TEST(GradCheck, Embedding) {
  // Repeated ids: the table's gradient must sum over every use of a row.
  Tensor ids = Tensor::from<int32_t>({2, 5}, {3, 1, 4, 1, 5, 9, 2, 6, 5, 3});
  Tensor table = random_tensor({11, 7}, 1), w = random_tensor({2, 5, 7}, 2), out = zeros64({2, 5, 7});
  const double scale = std::sqrt(7.0);
  auto loss = [&] {
    ops::embedding(ids, table, scale, out);
    return weighted_sum(out, w);
  };
  loss();
  Tensor dtable = zeros64(table.shape());
  ops::embedding_backward(ids, w, scale, dtable);
  expect_gradients_match(loss, {{"table", table, dtable}});
}

TEST(GradCheck, PositionalEncoding) {
  Tensor x = random_tensor({3, 5, 6}, 1), w = random_tensor({3, 5, 6}, 2), y = zeros64({3, 5, 6});
  auto loss = [&] {
    y.copy_from(x);
    ops::add_positional_encoding(y, 2);
    return weighted_sum(y, w);
  };
  loss();
  // The model passes the gradient through the encoding unchanged: dx = dy.
  Tensor dx = w.clone();
  expect_gradients_match(loss, {{"x", x, dx}});
}

// float32 products take other routes by shape (cpu/gemm.cc): a widening layer's weight gradient
// (Aᵀ·B with m ≥ 2n and k ≥ 512) is computed transposed and added back; check it, with alpha and
// beta, against the same product in double precision.
TEST(Matmul, WeightGradientOfAWideningLayerMatchesDoublePrecision) {
  // m and n not multiples of the 32-wide tiles; beta 0 must ignore C (NaN there), beta 0.5 scale it.
  const int64_t k = 600, m = 150, n = 65;
  const Tensor a = random_tensor({k, m}, 4), b = random_tensor({k, n}, 5), c0 = random_tensor({m, n}, 6);
  for (float beta : {0.0f, 0.5f, 1.0f}) {
    const ops::MatmulArgs args{.trans_a = true, .alpha = 0.5f, .beta = beta};
    Tensor want = c0.clone(), got = c0.to(DType::F32);
    if (beta == 0.0f) got.fill(std::nan(""));
    ops::matmul(a, b, want, args);
    ops::matmul(a.to(DType::F32), b.to(DType::F32), got, args);
    const std::vector<double> w = want.to_doubles(), g = got.to_doubles();
    for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-5 * k) << "beta " << beta << ", element " << i;
  }
}

TEST(GradCheck, LabelSmoothedCrossEntropy) {
  // Row 2 and row 5 are padding (ignored).
  Tensor logits = random_tensor({7, 13}, 1, -3, 3);
  Tensor targets = Tensor::from<int32_t>({7}, {4, 12, 0, 1, 7, 0, 3});
  const ops::LossArgs args{0.1, 0};
  Tensor lse = zeros64({7});
  auto loss = [&] { return ops::cross_entropy(logits, targets, args, lse).loss; };
  const ops::LossSum sum = ops::cross_entropy(logits, targets, args, lse);
  EXPECT_EQ(sum.tokens, 5);
  Tensor dlogits = zeros64(logits.shape());
  ops::cross_entropy_backward(logits, targets, lse, args, 1.0, dlogits);
  for (int64_t v = 0; v < 13; ++v) {
    EXPECT_EQ(dlogits.data<double>()[2 * 13 + v], 0.0) << "padding row 2 got a gradient";
    EXPECT_EQ(dlogits.data<double>()[5 * 13 + v], 0.0) << "padding row 5 got a gradient";
  }
  expect_gradients_match(loss, {{"logits", logits, dlogits}});
}

// The in-place form (training's) writes the same gradient over the logits, zero on padding rows,
// in float32 (the vectorized exp) and float64, with a row longer than one vector block.
TEST(GradCheck, CrossEntropyBackwardInPlaceEqualsTheAccumulatedForm) {
  for (DType dtype : {DType::F32, DType::F64}) {
    const Tensor logits = random_tensor({5, 37}, 3, -4, 4).to(dtype);
    const Tensor targets = Tensor::from<int32_t>({5}, {4, 0, 36, 1, 0});  // rows 1 and 4: padding
    const ops::LossArgs args{0.1, 0};
    const Tensor lse = Tensor::zeros({5}, dtype);
    ops::cross_entropy(logits, targets, args, lse);
    const Tensor expected = Tensor::zeros(logits.shape(), dtype);
    ops::cross_entropy_backward(logits, targets, lse, args, 0.25, expected);
    const Tensor in_place = logits.clone();
    ops::cross_entropy_backward_in_place(in_place, targets, lse, args, 0.25);
    const std::vector<double> a = in_place.to_doubles(), b = expected.to_doubles();
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-7) << name(dtype) << " element " << i;
    for (int64_t v = 0; v < 37; ++v) EXPECT_EQ(a[37 + v], 0.0) << "padding row 1 kept its logit";
  }
}

}  // namespace
}  // namespace tfm
