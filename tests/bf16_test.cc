// bfloat16 products (ops::Precision::kBf16, `train --bf16`): the rounding, the product against a
// double-precision reference on rounded inputs, bfloat16 tensors (DType::BF16) as the products'
// inputs, and a training step's gradients: with the activations kept in bfloat16
// (Context::use_bf16_activations) the same as with every product rounding its float32 inputs, and
// within bf16's rounding of float32's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "layers/linear.h"
#include "model/transformer.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "testing/errors.h"

namespace tfm {
namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

float rounded(float x) {
  Tensor t = Tensor::empty({1});
  t.data<float>()[0] = x;
  ops::round_to_bf16(t, t);
  return t.data<float>()[0];
}

TEST(Bf16, RoundsToNearestTiesToEven) {
  const float ulp = std::ldexp(1.0f, -7);  // bf16's spacing in [1, 2)
  EXPECT_EQ(rounded(1.0f), 1.0f);
  EXPECT_EQ(rounded(1.0f + ulp), 1.0f + ulp);                   // representable: unchanged
  EXPECT_EQ(rounded(1.0f + ulp / 2), 1.0f);                     // a tie, to the even 1.0
  EXPECT_EQ(rounded(1.0f + 3 * ulp / 2), 1.0f + 2 * ulp);       // a tie, to the even 1 + 2 ulp
  EXPECT_EQ(rounded(1.0f + ulp / 2 + ulp / 64), 1.0f + ulp);    // past the tie: up
  EXPECT_EQ(rounded(1.0f + ulp / 2 - ulp / 64), 1.0f);          // short of it: down
  EXPECT_EQ(rounded(-1.0f - ulp / 2 - ulp / 64), -1.0f - ulp);  // the sign is kept
  EXPECT_EQ(rounded(3.14159265f), 3.140625f);
  EXPECT_TRUE(std::signbit(rounded(-0.0f)));
  EXPECT_EQ(rounded(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(rounded(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());  // past bf16's largest
  EXPECT_EQ(rounded(-std::numeric_limits<float>::max()), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(rounded(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(rounded(bits_to_float(0x7f800001u))));  // a NaN whose payload would round to ∞
  // Every result has its low 16 bits clear.
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 10.0f);
  for (int i = 0; i < 1000; ++i) {
    const float r = rounded(normal(gen));
    uint32_t u;
    std::memcpy(&u, &r, sizeof u);
    ASSERT_EQ(u & 0xffffu, 0u) << r;
  }
}

// Rounding all of t at once gives, bit for bit, what rounding each element alone gives.
void expect_rounds_like_single_values(const Tensor& t) {
  Tensor r = Tensor::empty(t.shape());
  ops::round_to_bf16(t, r);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float alone = rounded(t.data<float>()[i]);
    uint32_t a, b;
    std::memcpy(&a, &alone, sizeof a);
    std::memcpy(&b, &r.data<float>()[i], sizeof b);
    ASSERT_EQ(a, b) << "element " << i << ": " << t.data<float>()[i];
  }
}

// Long tensors take the vectorized path (4, 8 or 16 at a time by the SIMD build, then a scalar tail):
// every special case rounds there exactly as alone.
TEST(Bf16, RoundsLongTensorsLikeSingleValues) {
  const float ulp = std::ldexp(1.0f, -7);
  const std::vector<float> special = {1.0f,
                                      1.0f + ulp / 2,
                                      1.0f + 3 * ulp / 2,
                                      1.0f + ulp / 2 + ulp / 64,
                                      -1.0f - ulp / 2 - ulp / 64,
                                      -0.0f,
                                      std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::max(),
                                      -std::numeric_limits<float>::max(),
                                      std::numeric_limits<float>::quiet_NaN(),
                                      bits_to_float(0x7f800001u),
                                      bits_to_float(0xff800001u),
                                      std::numeric_limits<float>::denorm_min(),
                                      3.14159265f};
  Tensor t = Tensor::empty({53});  // 3, 6 or 13 full vectors and a tail of 5, 5 or 1
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = special[static_cast<size_t>(i) % special.size()];
  expect_rounds_like_single_values(t);
}

// Past the block size and the threshold for threads: every element as alone, special values
// scattered at positions that are not multiples of the vector width.
TEST(Bf16, RoundsTensorsOfSeveralBlocksLikeSingleValues) {
  constexpr int64_t n = 70001;
  Tensor t = Tensor::empty({n});
  std::mt19937 gen(9);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = normal(gen);
  const float special[] = {bits_to_float(0x7f800001u), std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::max(), bits_to_float(0x3f808000u), bits_to_float(0x3f818000u)};
  for (int64_t i = 3; i < n; i += 4093) t.data<float>()[i] = special[(i / 4093) % 5];
  expect_rounds_like_single_values(t);
}

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::empty(shape);
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(gen);
  return t;
}

// C = alpha · op(A) · op(B) + beta · C in double precision from float inputs.
std::vector<double> reference(const Tensor& a, const Tensor& b, const Tensor& c, bool ta, bool tb, int64_t batch,
                              int64_t m, int64_t n, int64_t k, double alpha, double beta) {
  std::vector<double> out(static_cast<size_t>(batch * m * n));
  for (int64_t p = 0; p < batch; ++p) {
    const float* A = a.data<float>() + p * m * k;
    const float* B = b.data<float>() + p * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l)
          s += static_cast<double>(ta ? A[l * m + i] : A[i * k + l]) * (tb ? B[j * k + l] : B[l * n + j]);
        out[static_cast<size_t>((p * m + i) * n + j)] = alpha * s + beta * c.data<float>()[(p * m + i) * n + j];
      }
  }
  return out;
}


struct Product {
  bool ta, tb;
  int64_t batch;
  float alpha, beta;
};
class Bf16ProductTest : public ::testing::TestWithParam<Product> {};

TEST_P(Bf16ProductTest, IsTheExactProductOfRoundedInputsSummedInFloat32) {
  const auto [ta, tb, batch, alpha, beta] = GetParam();
  const int64_t m = 37, n = 29, k = 300;
  const Tensor a = random_tensor(batch > 1 ? Shape{batch, ta ? k : m, ta ? m : k} : Shape{ta ? k : m, ta ? m : k}, 1);
  const Tensor b = random_tensor(batch > 1 ? Shape{batch, tb ? n : k, tb ? k : n} : Shape{tb ? n : k, tb ? k : n}, 2);
  const Tensor c0 = random_tensor(batch > 1 ? Shape{batch, m, n} : Shape{m, n}, 3);
  Tensor c = c0.clone();
  ops::matmul(a, b, c, {ta, tb, alpha, beta, ops::Precision::kBf16});

  Tensor a16 = a.clone(), b16 = b.clone();
  ops::round_to_bf16(a16, a16);
  ops::round_to_bf16(b16, b16);
  const std::vector<double> want = reference(a16, b16, c0, ta, tb, batch, m, n, k, alpha, beta);
  const std::vector<double> unrounded = reference(a, b, c0, ta, tb, batch, m, n, k, alpha, beta);
  double worst = 0, moved = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(c.data<float>()[i] - want[i]));
    moved = std::max(moved, std::abs(want[i] - unrounded[i]));
  }
  // float32 sums of 300 products of size ~1: errors of ~1e-5; the rounding of the inputs moves
  // the result by ~1e-2, so a product that skipped it would fail.
  EXPECT_LT(worst, 2e-4);
  EXPECT_GT(moved, 5e-3);
}

INSTANTIATE_TEST_SUITE_P(Transpositions, Bf16ProductTest,
                         ::testing::Values(Product{false, false, 1, 0.5f, 1.0f}, Product{false, true, 1, 0.5f, 1.0f},
                                           Product{true, false, 1, 0.5f, 1.0f}, Product{true, true, 1, 0.5f, 1.0f},
                                           Product{false, true, 3, 0.5f, 1.0f}, Product{false, true, 1, 2.0f, 0.0f},
                                           Product{true, false, 1, 1.0f, 0.25f}),
                         [](const auto& info) {
                           const Product& p = info.param;
                           return std::string(p.ta ? "At" : "A") + (p.tb ? "Bt" : "B") + (p.batch > 1 ? "Batched" : "") +
                                  (p.beta == 0.0f ? "Overwrite" : p.beta != 1.0f ? "ScaledSum" : "");
                         });

TEST(Bf16, EmptySumScalesC) {
  const Tensor a = Tensor::zeros({3, 0}), b = Tensor::zeros({0, 2});
  Tensor c = Tensor::empty({3, 2});
  for (int64_t i = 0; i < 6; ++i) c.data<float>()[i] = static_cast<float>(i);
  ops::matmul(a, b, c, {.beta = 0.5f, .precision = ops::Precision::kBf16});
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(c.data<float>()[i], 0.5f * static_cast<float>(i));
  ops::matmul(a, b, c, {.precision = ops::Precision::kFloat32});  // float32 too (its plan had lost the batch)
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(c.data<float>()[i], 0.0f);
}

TEST(Bf16, FoldedRowsAndOverwriteWork) {
  // A [2, 3, k] · Wᵀ with W [n, k]: the linear layers' shape, C overwritten (beta 0, stale values in C).
  const int64_t k = 64, n = 10;
  const Tensor x = random_tensor({2, 3, k}, 4), w = random_tensor({n, k}, 5);
  Tensor y = random_tensor({2, 3, n}, 6);
  ops::matmul(x, w, y, {.trans_b = true, .precision = ops::Precision::kBf16});
  Tensor x16 = x.clone(), w16 = w.clone();
  ops::round_to_bf16(x16, x16);
  ops::round_to_bf16(w16, w16);
  Tensor want = Tensor::empty({2, 3, n});
  ops::matmul(x16, w16, want, {.trans_b = true});
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y.data<float>()[i], want.data<float>()[i], 1e-4) << i;
}

TEST(Bf16, RefusesFloat64) {
  const Tensor a = Tensor::zeros({4, 4}, DType::F64), c = Tensor::zeros({4, 4}, DType::F64);
  testing::expect_error([&] { ops::matmul(a, a, c, {.precision = ops::Precision::kBf16}); },
                        {"bfloat16 products take float32 tensors", "float64"});
}

Tensor rounded_copy(const Tensor& x) {
  Tensor r = x.clone();
  ops::round_to_bf16(r, r);
  return r;
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const char* what) {
  ASSERT_EQ(got.numel(), want.numel()) << what;
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(got.data<float>()[i] - want.data<float>()[i])));
  EXPECT_LT(worst, tol) << what;
}

// Each of a linear layer's three products (y, dx, dW) runs on rounded inputs: against float32 products
// of rounded copies, exactly up to float32 summation.
TEST(Bf16, EveryProductOfALinearLayerRounds) {
  ParamStore params;
  const Linear layer(params, "fc", 48, 24);
  params.allocate();
  const Tensor w = params.value(layer.weight), bias = params.value(layer.bias);
  w.copy_from(random_tensor(w.shape(), 20));
  bias.copy_from(random_tensor(bias.shape(), 21));
  const Tensor x = random_tensor({5, 7, 48}, 22), dy = random_tensor({5, 7, 24}, 23);
  Context ctx{&params, nullptr, nullptr, nullptr, ops::Precision::kBf16};

  const Tensor y = layer.forward(ctx, x);
  Tensor dx = Tensor::zeros(x.shape());
  params.zero_grad();
  layer.backward(ctx, x, dy, &dx);

  const Tensor x16 = rounded_copy(x), w16 = rounded_copy(w), dy16 = rounded_copy(dy);
  Tensor want_y = Tensor::empty(y.shape()), want_dx = Tensor::zeros(x.shape()), want_dw = Tensor::zeros(w.shape());
  ops::matmul(x16, w16, want_y, {.trans_b = true});
  ops::bias_add(want_y, bias, want_y);
  ops::matmul(dy16, w16, want_dx);
  ops::matmul(dy16.view({35, 24}), x16.view({35, 48}), want_dw, {.trans_a = true});
  expect_close(y, want_y, 1e-4, "y");
  expect_close(dx, want_dx, 1e-4, "dx");
  expect_close(params.grad(layer.weight), want_dw, 1e-4, "dW");
  // The rounding matters at this size: float32 products differ by far more.
  Tensor y32 = Tensor::empty(y.shape());
  ops::matmul(x, w, y32, {.trans_b = true});
  ops::bias_add(y32, bias, y32);
  double moved = 0;
  for (int64_t i = 0; i < y.numel(); ++i)
    moved = std::max(moved, std::abs(static_cast<double>(y32.data<float>()[i] - want_y.data<float>()[i])));
  EXPECT_GT(moved, 1e-3);
}

// A model small enough for exact references, big enough for bf16's rounding to show.
ModelConfig small_config(int64_t vocab_size) {
  ModelConfig c = model_preset("tiny");
  c.vocab_size = vocab_size;
  c.d_model = 32;
  c.heads = 4;
  c.d_ff = 64;
  return c;
}

TEST(Bf16, OutputProjectionRounds) {
  Transformer model(small_config(50));
  model.init_parameters(3);
  const Tensor hidden = random_tensor({3, 4, 32}, 30);
  Context ctx = model.context();
  ctx.products = ops::Precision::kBf16;
  const Tensor logits = model.project(ctx, hidden);
  const Tensor e16 = rounded_copy(model.params().value(model.tgt_embedding));
  Tensor want = Tensor::empty(logits.shape());
  ops::matmul(rounded_copy(hidden), e16, want, {.trans_b = true});
  expect_close(logits, want, 1e-4, "logits");
  const Tensor logits32 = model.project(model.context(), hidden);  // float32: the rounding shows
  double moved = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    moved = std::max(moved, std::abs(static_cast<double>(logits32.data<float>()[i] - want.data<float>()[i])));
  EXPECT_GT(moved, 1e-4);
}

// One training step's loss and gradients in both precisions, on a small model.
struct Step {
  double loss = 0;
  std::vector<float> grads;
};
// kFloat32; kBf16Products: each product rounds its float32 inputs; kBf16Activations: `train --bf16`.
enum class Mode { kFloat32, kBf16Products, kBf16Activations };
Step training_step(Mode mode, const ModelConfig& c = small_config(40)) {
  Transformer model(c);
  model.init_parameters(7);
  const Batch batch = make_batch({{4, 5, 6, 7, 8, 9}, {9, 4, 30}, {10, 5, 7, 22, 31}},
                                 {{5, 6, 7, 12}, {8, 9, 10, 4, 6, 33}, {7, 20}}, c);
  Rng rng(11);
  Context ctx = model.context(&rng);
  if (mode == Mode::kBf16Products) ctx.products = ops::Precision::kBf16;
  if (mode == Mode::kBf16Activations) ctx.use_bf16_activations();
  model.params().zero_grad();
  Transformer::Saved saved;
  const Tensor logits = model.forward(ctx, batch, &saved);
  const Tensor flat = logits.view({logits.shape().rows(), c.vocab_size});
  const Tensor targets = batch.tgt_out.view({batch.tgt_out.numel()});
  Tensor lse = Tensor::empty({flat.size(0)});
  const ops::LossArgs args{0.1, c.pad_id};
  Step s;
  s.loss = ops::cross_entropy(flat, targets, args, lse).loss;
  Tensor dlogits = Tensor::zeros(logits.shape());
  ops::cross_entropy_backward(flat, targets, lse, args, 1.0, dlogits.view(flat.shape()));
  model.backward(ctx, batch, saved, dlogits);
  const Tensor g = model.params().grads();
  s.grads.assign(g.data<float>(), g.data<float>() + g.numel());
  return s;
}

TEST(Bf16, TrainingStepStaysWithinBf16RoundingOfFloat32) {
  const Step f32 = training_step(Mode::kFloat32);
  const Step b16 = training_step(Mode::kBf16Activations);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < f32.grads.size(); ++i) {
    diff += (b16.grads[i] - f32.grads[i]) * static_cast<double>(b16.grads[i] - f32.grads[i]);
    norm += f32.grads[i] * static_cast<double>(f32.grads[i]);
  }
  const double rel = std::sqrt(diff / norm);
  // bf16 keeps 8 significant bits (relative rounding ≤ 2^-9 ≈ 0.002 per input); through the ~40
  // products of a forward and backward of this model the gradients moved by 3.2% (each parameter
  // by 0.5–6%, more the further back from the loss it sits), about what mixed precision usually
  // gives: neither nothing (the products did run in bf16) nor far more (a wrong product would).
  EXPECT_GT(rel, 1e-3);
  EXPECT_LT(rel, 0.1);
  EXPECT_NEAR(b16.loss, f32.loss, 1e-2 * std::abs(f32.loss));
  EXPECT_NE(b16.loss, f32.loss);
}

// The activations kept in bfloat16 change where each is rounded (once, where it is made), not what
// any product computes: the loss and every gradient bit for bit those of products that round their
// float32 inputs themselves. Post-LN with ReLU (the paper's), and pre-LN RMSNorm with a gated SiLU
// (Llama's), whose feed-forward keeps another tensor.
TEST(Bf16, ActivationsInBf16GiveTheSameStepAsProductsRoundingTheirInputs) {
  ModelConfig llama = small_config(40);
  llama.pre_norm = true;
  llama.norm = "rmsnorm";
  llama.activation = "swish";
  llama.gated = true;
  for (const ModelConfig& c : {small_config(40), llama}) {
    const Step each = training_step(Mode::kBf16Products, c);
    const Step once = training_step(Mode::kBf16Activations, c);
    EXPECT_EQ(once.loss, each.loss);
    ASSERT_EQ(once.grads.size(), each.grads.size());
    size_t differ = 0;
    for (size_t i = 0; i < each.grads.size(); ++i) differ += once.grads[i] != each.grads[i];
    EXPECT_EQ(differ, 0u) << "of " << each.grads.size() << " gradients (" << c.norm << ")";
  }
}

// ops::to_bf16 makes the values round_to_bf16 makes; a product reading them (and a bfloat16 weight)
// gives the product of float32 inputs rounded by the product itself, forward and backward.
TEST(Bf16, ProductsReadBf16TensorsAsTheRoundedFloat32Ones) {
  const Tensor x = random_tensor({37, 24}, 41), w = random_tensor({19, 24}, 42), dy = random_tensor({37, 19}, 43);
  const Tensor bias = random_tensor({19}, 44);
  const Tensor x16 = ops::to_bf16(x), w16 = ops::to_bf16(w);
  ASSERT_EQ(x16.dtype(), DType::BF16);
  const std::vector<double> widened = x16.to_doubles();
  const Tensor xr = rounded_copy(x);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(widened[static_cast<size_t>(i)], xr.data<float>()[i]) << i;
  Tensor y32 = Tensor::empty({37, 19}), y16 = Tensor::empty({37, 19});
  ops::linear(x, w, bias, ops::Activation::kRelu, y32, ops::Precision::kBf16);
  ops::linear(x16, w16, bias, ops::Activation::kRelu, y16, ops::Precision::kBf16);
  EXPECT_EQ(y16.to_doubles(), y32.to_doubles());
  Tensor dx32 = Tensor::zeros({37, 24}), dw32 = Tensor::zeros({19, 24}), db32 = Tensor::zeros({19});
  Tensor dx16 = Tensor::zeros({37, 24}), dw16 = Tensor::zeros({19, 24}), db16 = Tensor::zeros({19});
  ops::linear_backward(x, w, dy, &dx32, dw32, db32, ops::Precision::kBf16);
  ops::linear_backward(x16, w16, dy, &dx16, dw16, db16, ops::Precision::kBf16);
  EXPECT_EQ(dx16.to_doubles(), dx32.to_doubles());
  EXPECT_EQ(dw16.to_doubles(), dw32.to_doubles());
  EXPECT_EQ(db16.to_doubles(), db32.to_doubles());
  // The bias gradient summed from float32 dy (in the pass that rounds dy for the products), as
  // bias_add_backward sums it.
  Tensor db_want = Tensor::zeros({19});
  ops::bias_add_backward(dy, db_want);
  EXPECT_EQ(db16.to_doubles(), db_want.to_doubles());
  // ReLU's backward from the bfloat16 output: the float32 output's mask.
  Tensor relu_y = Tensor::empty({37, 19});
  ops::relu(dy, relu_y);
  Tensor d32 = Tensor::zeros({37, 19}), d16 = Tensor::zeros({37, 19});
  ops::relu_backward(relu_y, dy, d32);
  ops::relu_backward(ops::to_bf16(relu_y), dy, d16);
  EXPECT_EQ(d16.to_doubles(), d32.to_doubles());
}

// |C − op(A)·op(B)|, against the bound of bf16's rounding: each input is within 2^-9 of its value
// (relative), so each term a·b within 2^-8 + 2^-18 of its own, and the float32 sum of k terms adds at
// most k·2^-24 of their absolute sum (twice that for the margin): element (i, j) stays within
// (2^-8 + 2^-18 + k·2^-23) · Σ_k |a_ik|·|b_kj|. Returns the worst share of that bound used.
double bound_share(const Tensor& got, const Tensor& a, const Tensor& b, bool ta, bool tb, int64_t m, int64_t n,
                   int64_t k) {
  double worst = 0;
  const double rate = std::ldexp(1.0, -8) + std::ldexp(1.0, -18) + static_cast<double>(k) * std::ldexp(1.0, -23);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0, size = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = a.data<float>()[ta ? p * m + i : i * k + p], y = b.data<float>()[tb ? j * k + p : p * n + j];
        exact += x * y;
        size += std::abs(x * y);
      }
      worst = std::max(worst, std::abs(got.data<float>()[i * n + j] - exact) / (rate * size));
    }
  return worst;
}

// Op by op against float32's definition: a linear layer's three products (y = x·Wᵀ, dx = dy·W,
// dW = dyᵀ·x) from bfloat16 activations and weights, each element within the bound above of the
// exact product of the float32 values; and the rounding shows (a share above 0.01: float32
// products of these sizes use about 0.002 of it).
TEST(Bf16, ALinearLayerStaysWithinBf16sBoundOfFloat32) {
  const int64_t N = 45, in = 96, out = 40;
  const Tensor x = random_tensor({N, in}, 51), w = random_tensor({out, in}, 52), dy = random_tensor({N, out}, 53);
  Tensor y = Tensor::empty({N, out}), dx = Tensor::zeros({N, in}), dw = Tensor::zeros({out, in});
  ops::linear(ops::to_bf16(x), ops::to_bf16(w), Tensor::zeros({out}), ops::Activation::kNone, y,
              ops::Precision::kBf16);
  ops::linear_backward(ops::to_bf16(x), ops::to_bf16(w), dy, &dx, dw, Tensor::zeros({out}), ops::Precision::kBf16);
  const double shares[] = {bound_share(y, x, w, false, true, N, out, in), bound_share(dx, dy, w, false, false, N, in, out),
                           bound_share(dw, dy, x, true, false, out, in, N)};
  for (const double share : shares) {
    EXPECT_LE(share, 1.0);
    EXPECT_GT(share, 0.01);
  }
  std::printf("share of bf16's bound used: y %.3f, dx %.3f, dW %.3f\n", shares[0], shares[1], shares[2]);
}

// The loss's gradient written in bfloat16 (bf16 training's output projection reads it so): each
// value the float32 gradient's rounded, ignored rows zero; a float32 destination is refused.
TEST(Bf16, LossGradientInBf16IsTheFloat32OneRounded) {
  const int64_t N = 6, V = 1037;  // rows split between threads, a vocabulary not a multiple of the vectors
  const Tensor logits = random_tensor({N, V}, 61);
  const Tensor targets = Tensor::from<int32_t>({N}, {3, 0, 1036, 0, 512, 7});
  const ops::LossArgs args{0.1, 0};  // ignore_index 0: rows 1 and 3 are padding
  Tensor lse = Tensor::empty({N});
  ops::cross_entropy(logits, targets, args, lse);
  Tensor want = Tensor::zeros({N, V});
  ops::cross_entropy_backward(logits, targets, lse, args, 0.25, want);
  ops::round_to_bf16(want, want);
  const Tensor got = Tensor::empty({N, V}, DType::BF16);
  got.fill(7.0);  // written over, ignored rows included
  ops::cross_entropy_backward_bf16(logits, targets, lse, args, 0.25, got);
  EXPECT_EQ(got.to_doubles(), want.to_doubles());
  testing::expect_error([&] { ops::cross_entropy_backward_bf16(logits, targets, lse, args, 0.25, want); },
                        {"cross_entropy_backward_bf16: dlogits has dtype float32, expected bfloat16"});
}

// A bfloat16 input needs a bfloat16 product: a float32 one refuses it, naming it.
TEST(Bf16, Float32ProductsRefuseBf16Inputs) {
  const Tensor x16 = ops::to_bf16(random_tensor({4, 8}, 45)), w = random_tensor({3, 8}, 46);
  Tensor y = Tensor::empty({4, 3});
  testing::expect_error([&] { ops::matmul(x16, w, y, {.trans_b = true}); }, {"matmul: A holds bfloat16 values"});
  testing::expect_error([&] { ops::linear(x16, w, Tensor::zeros({3}), ops::Activation::kNone, y); },
                        {"linear: x holds bfloat16 values"});
  testing::expect_error([&] { ops::to_bf16(Tensor::zeros({2}, DType::F64)); },
                        {"to_bf16: takes a float32 tensor, got float64"});
}

}  // namespace
}  // namespace tfm
