// The feed-forward activations (ops/activation.h): each kernel against its definition evaluated in
// long double, in float32 and float64; backward against the analytic derivative and finite
// differences; a FeedForward layer with each activation against finite differences and against
// PyTorch (tests/fixtures/feed_forward.json); and a linear layer's plain, packed and int8 products
// with each activation against one another.
//
// Tolerances, |got − want| ≤ k · ulp(want) + 2·|x|·(smallest denormal):
//   float32 forward k = 4: the vector swish and gelu_sigmoid measure within ~3 ulps, gelu (on
//     float lanes) within 3, gelu_tanh (computed in double, then rounded) within 1. The second term covers results that underflow into denormals
//     (x·σ(x) for x ≈ −100): the rounding of σ there is |x| times magnified.
//   float64 forward: 1e-12 relative. The double kernels round a·x (gelu_sigmoid) and x/√2 (gelu's
//     erfc argument), which costs up to 2·(x²/2)·2⁻⁵³ relative: 4e-14 at x = −20; gelu_tanh's w
//     (five roundings) up to 5·|w|·2⁻⁵³, 4e-13 where its result leaves the normal range (|w| ≈ 708). The finite-
//     difference checks that the double kernels serve need far less.
//   backward: 8 · eps · (|first term| + |second term|) of the derivative σ(u) + u·σ(u)·(1 − σ(u)),
//     Φ(x) + x·φ(x) or σ(w) + x·w′·σ(w)·σ(−w) (the two cancel near swish's minimum, x ≈ −1.28), float64 with eps 1e-12 as above.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "layers/feed_forward.h"
#include "layers/linear.h"
#include "ops/elementwise.h"
#include "ops/int8.h"
#include "ops/matmul.h"
#include "ops/packed.h"
#include "testing/fixture.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace ops {
// Names the parameter in gtest's failure lines ("GetParam() = swish") instead of printing its bytes.
inline void PrintTo(Activation a, std::ostream* os) { *os << activation_name(a); }
}  // namespace ops

inline void PrintTo(DType t, std::ostream* os) { *os << name(t); }

namespace {

using ops::Activation;
using testing::random_tensor;
using testing::weighted_sum;

constexpr Activation kAll[] = {Activation::kNone, Activation::kRelu, Activation::kSwish, Activation::kGelu,
                               Activation::kGeluSigmoid, Activation::kGeluTanh};
std::string activation_test_name(const ::testing::TestParamInfo<Activation>& info) {
  return ops::activation_name(info.param);
}

// The definitions, in long double.
using real = long double;
real sigmoid(real u) { return u >= 0 ? 1 / (1 + std::exp(-u)) : std::exp(u) / (1 + std::exp(u)); }
real slope(Activation a) { return a == Activation::kGeluSigmoid ? 1.702L : 1.0L; }  // σ(slope · x)
// gelu_tanh = 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), written as x / (1 + e^(−2u)) (the
// same function: 1 + tanh(u) = 2 / (1 + e^(−2u))), which keeps x ≪ 0 accurate where 1 + tanh(u)
// would cancel even in long double; and d(2u)/dx.
const real kSqrt2OverPi = std::sqrt(2 / 3.14159265358979323846264L);
real tanh_w(real x) { return 2 * kSqrt2OverPi * (x + 0.044715L * x * x * x); }
real tanh_w_slope(real x) { return 2 * kSqrt2OverPi * (1 + 3 * 0.044715L * x * x); }

real reference(Activation a, real x) {
  switch (a) {
    case Activation::kNone: return x;
    case Activation::kRelu: return x > 0 ? x : 0;
    case Activation::kSwish:
    case Activation::kGeluSigmoid: return x * sigmoid(slope(a) * x);
    case Activation::kGelu: return 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
    case Activation::kGeluTanh: return x / (1 + std::exp(-tanh_w(x)));
  }
  return 0;
}

// The derivative as its two terms: σ(u) and u·σ(u)·σ(−u) (u = slope·x), Φ(x) and x·φ(x), or σ(w)
// and x·w′·σ(w)·σ(−w) (w = tanh_w(x)).
std::pair<real, real> reference_grad_terms(Activation a, real x) {
  switch (a) {
    case Activation::kNone: return {1, 0};
    case Activation::kRelu: return {x > 0 ? 1 : 0, 0};
    case Activation::kSwish:
    case Activation::kGeluSigmoid: {
      const real u = slope(a) * x;
      return {sigmoid(u), u * sigmoid(u) * sigmoid(-u)};
    }
    case Activation::kGelu: {
      const real pi = 3.14159265358979323846264L;
      return {0.5L * std::erfc(-x / std::sqrt(2.0L)), x * std::exp(-0.5L * x * x) / std::sqrt(2 * pi)};
    }
    case Activation::kGeluTanh: {
      const real w = tanh_w(x);
      return {sigmoid(w), x * tanh_w_slope(x) * sigmoid(w) * sigmoid(-w)};
    }
  }
  return {0, 0};
}

// The spacing of T's values at |v|.
template <class T>
real ulp(real v) {
  v = std::abs(v);
  if (!(v >= std::numeric_limits<T>::min())) return std::numeric_limits<T>::denorm_min();
  return std::ldexp(real(1), std::ilogb(v) - (std::numeric_limits<T>::digits - 1));
}

template <class T>
real forward_tolerance(real want, real x) {
  const real floor = 2 * std::abs(x) * std::numeric_limits<T>::denorm_min();
  if constexpr (std::is_same_v<T, float>) return 4 * ulp<T>(want) + floor;
  return 1e-12L * std::abs(want) + floor;
}

template <class T>
real backward_tolerance(std::pair<real, real> terms, real x) {
  const real eps = std::is_same_v<T, float> ? real(std::numeric_limits<float>::epsilon()) : 1e-12L;
  return 8 * eps * (std::abs(terms.first) + std::abs(terms.second)) +
         2 * (1 + std::abs(x)) * std::numeric_limits<T>::denorm_min();
}

// [−20, 20] in steps of 0.001, random values there, and the edges: zeros, denormals, the smallest
// normal, where e^−|x| leaves the normal range (87–88) and reaches 0 (104; 61 for gelu_sigmoid's
// 1.702·x), and huge values.
template <class T>
std::vector<T> inputs() {
  std::vector<T> v;
  for (int i = -20000; i <= 20000; ++i) v.push_back(static_cast<T>(i / 1000.0));
  const Tensor r = random_tensor({4099}, 5, -20, 20);
  for (int64_t i = 0; i < r.numel(); ++i) v.push_back(static_cast<T>(r.data<double>()[i]));
  const T lim = std::numeric_limits<T>::max(), tiny = std::numeric_limits<T>::min();
  const T denormal = std::numeric_limits<T>::denorm_min() * 1000;
  for (T e : {T(0), T(1e-20), denormal, tiny, T(0.5), T(30), T(50), T(61), T(61.2), T(87), T(88), T(90), T(100),
              T(103.9), T(104), T(110), T(1e4), T(1e30), lim}) {
    v.push_back(e);
    v.push_back(-e);
  }
  return v;
}

template <class T>
Tensor tensor_of(const std::vector<T>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, std::is_same_v<T, float> ? DType::F32 : DType::F64);
  std::copy(v.begin(), v.end(), t.data<T>());
  return t;
}

class ActivationKernel : public ::testing::TestWithParam<Activation> {
 protected:
  template <class T>
  void expect_forward_matches_definition() {
    const Activation act = GetParam();
    const std::vector<T> xs = inputs<T>();
    const Tensor x = tensor_of(xs), y = Tensor::empty(x.shape(), x.dtype());
    ops::activate(act, x, y);
    int failures = 0;
    real worst_ulps = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const real want = reference(act, xs[i]), got = y.data<T>()[i];
      const real err = std::abs(got - want);
      if (std::abs(xs[i]) <= 20 && std::abs(want) >= std::numeric_limits<T>::min())  // normal results
        worst_ulps = std::max(worst_ulps, err / ulp<T>(want));
      if (!(err <= forward_tolerance<T>(want, xs[i])) && failures++ < 10)
        ADD_FAILURE() << ops::activation_name(act) << "(" << double(xs[i]) << ") = " << double(got) << ", want "
                      << double(want) << " (" << double(err / ulp<T>(want)) << " ulps)";
    }
    EXPECT_EQ(failures, 0);
    // The measure behind the tolerances above, over [−20, 20] where the result is a normal number (in
    // --gtest_output=xml's report).
    RecordProperty("worst_ulps", std::to_string(double(worst_ulps)));
  }

  template <class T>
  void expect_backward_matches_derivative() {
    const Activation act = GetParam();
    const std::vector<T> xs = inputs<T>();
    const Tensor pre = tensor_of(xs), dy = Tensor::empty(pre.shape(), pre.dtype());
    dy.fill(1.0);
    Tensor dx = Tensor::zeros(pre.shape(), pre.dtype());
    ops::activation_backward(act, pre, dy, dx);
    int failures = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const auto terms = reference_grad_terms(act, xs[i]);
      const real want = terms.first + terms.second, got = dx.data<T>()[i];
      if (!(std::abs(got - want) <= backward_tolerance<T>(terms, xs[i])) && failures++ < 10)
        ADD_FAILURE() << ops::activation_name(act) << "'(" << double(xs[i]) << ") = " << double(got) << ", want "
                      << double(want);
    }
    EXPECT_EQ(failures, 0);
    // It accumulates: dx += dy · act′, here 2 · act′ on top of the first.
    dy.fill(2.0);
    ops::activation_backward(act, pre, dy, dx);
    for (size_t i = 0; i < xs.size(); i += 97) {
      const auto terms = reference_grad_terms(act, xs[i]);
      ASSERT_LE(std::abs(dx.data<T>()[i] - 3 * (terms.first + terms.second)), 3 * backward_tolerance<T>(terms, xs[i]))
          << xs[i];
    }
  }
};

TEST_P(ActivationKernel, Float32MatchesTheDefinition) { expect_forward_matches_definition<float>(); }
TEST_P(ActivationKernel, Float64MatchesTheDefinition) { expect_forward_matches_definition<double>(); }
TEST_P(ActivationKernel, Float32BackwardMatchesTheDerivative) { expect_backward_matches_derivative<float>(); }
TEST_P(ActivationKernel, Float64BackwardMatchesTheDerivative) { expect_backward_matches_derivative<double>(); }

// In place (y = x), and lengths around the vector widths and the kernels' runs of 4,096 elements:
// the tails and every run boundary against the out-of-place result of the whole array.
TEST_P(ActivationKernel, InPlaceAndEveryLength) {
  const Activation act = GetParam();
  const Tensor all = random_tensor({3 * 4096 + 21}, 6, -8, 8).to(DType::F32);
  Tensor want = Tensor::empty(all.shape());
  ops::activate(act, all, want);
  for (int64_t n : {1, 3, 4, 5, 8, 15, 16, 17, 31, 33, 4095, 4096, 4097, 8192, 8193, 3 * 4096 + 21}) {
    SCOPED_TRACE(::testing::Message() << n << " elements");
    Tensor x = Tensor::empty({n});
    x.copy_from(all.rows(0, n));
    ops::activate(act, x, x);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(x.data<float>()[i], want.data<float>()[i]) << i;
  }
}

// Central differences of Σ w ⊙ act(x) in float64; x kept off ReLU's kink at 0.
TEST_P(ActivationKernel, BackwardMatchesFiniteDifferences) {
  const Activation act = GetParam();
  Tensor x = random_tensor({7, 13}, 1, -6, 6);
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::abs(x.data<double>()[i]) < 0.01) x.data<double>()[i] = 0.5;
  const Tensor w = random_tensor({7, 13}, 2), y = Tensor::zeros({7, 13}, DType::F64);
  auto loss = [&] {
    ops::activate(act, x, y);
    return weighted_sum(y, w);
  };
  Tensor dx = Tensor::zeros(x.shape(), DType::F64);
  ops::activation_backward(act, x, w, dx);
  testing::expect_gradients_match(loss, {{"x", x, dx}});
}

INSTANTIATE_TEST_SUITE_P(Activation, ActivationKernel, ::testing::ValuesIn(kAll), activation_test_name);

TEST(Activation, NamesRoundTrip) {
  for (Activation a : kAll) {
    Activation parsed = Activation::kNone;
    ASSERT_TRUE(ops::parse_activation(ops::activation_name(a), &parsed)) << ops::activation_name(a);
    EXPECT_EQ(parsed, a);
  }
  EXPECT_STREQ(ops::activation_name(Activation::kGeluSigmoid), "gelu_sigmoid");
  EXPECT_STREQ(ops::activation_name(Activation::kGeluTanh), "gelu_tanh");
  Activation untouched = Activation::kSwish;
  for (const char* wrong : {"", "Relu", "silu", "gelu_new", "gelu "})
    EXPECT_FALSE(ops::parse_activation(wrong, &untouched)) << wrong;
  EXPECT_EQ(untouched, Activation::kSwish);
}

// Mismatched shapes and dtypes are refused with the op's name.
TEST(Activation, RefusesMismatchedTensors) {
  const Tensor x = Tensor::zeros({3, 4}), y = Tensor::zeros({3, 5});
  EXPECT_THROW(ops::activate(Activation::kSwish, x, y), Error);
  EXPECT_THROW(ops::activate(Activation::kGelu, x, Tensor::zeros({3, 4}, DType::F64)), Error);
  EXPECT_THROW(ops::activation_backward(Activation::kSwish, x, x, y), Error);
}

class FeedForwardActivation : public ::testing::TestWithParam<Activation> {};

// Every input and parameter of a float64 layer against central differences. The loss recomputes
// the forward without saving (fc1 takes the activation in its own call), the backward uses the
// saved forward's (fc1 without it, then the activation): the two paths must be the same function.
TEST_P(FeedForwardActivation, GradientsMatchFiniteDifferences) {
  const Activation act = GetParam();
  ParamStore params;
  const FeedForward ffn(params, "ffn", 6, 9, act);
  params.allocate(DType::F64);
  uint64_t seed = 20;
  for (int id : {ffn.fc1.weight, ffn.fc1.bias, ffn.fc2.weight, ffn.fc2.bias})
    params.value(id).copy_from(random_tensor(params.shape(id), seed++));
  const Tensor x = random_tensor({2, 3, 6}, 30, -2, 2), w = random_tensor({2, 3, 6}, 31);
  const Context ctx{&params};
  FeedForward::Saved saved;
  ffn.forward(ctx, x, &saved);
  params.zero_grad();
  Tensor dx = Tensor::zeros(x.shape(), DType::F64);
  ffn.backward(ctx, saved, w, dx);
  testing::expect_gradients_match([&] { return weighted_sum(ffn.forward(ctx, x, nullptr), w); },
                                  {{"x", x, dx}, {"parameters", params.values(), params.grads()}});
}

// ReLU keeps one [B, L, F] tensor as before (its backward reads the output); the others keep their
// input too, and the saved hidden is act(pre).
TEST_P(FeedForwardActivation, SavesTheActivationInputOnlyWhenItsBackwardNeedsIt) {
  const Activation act = GetParam();
  ParamStore params;
  const FeedForward ffn(params, "ffn", 8, 16, act);
  EXPECT_EQ(ffn.activation, act);
  params.allocate();
  uint64_t seed = 40;
  for (int id : {ffn.fc1.weight, ffn.fc1.bias, ffn.fc2.weight, ffn.fc2.bias})
    params.value(id).copy_from(random_tensor(params.shape(id), seed++).to(DType::F32));
  const Tensor x = random_tensor({2, 5, 8}, 50, -2, 2).to(DType::F32);
  const Context ctx{&params};
  FeedForward::Saved saved;
  const Tensor y = ffn.forward(ctx, x, &saved);
  EXPECT_EQ(saved.pre.defined(), act != Activation::kRelu);
  const Tensor pre = ffn.fc1.forward(ctx, x);
  for (int64_t i = 0; i < pre.numel(); ++i) {
    const float p = pre.data<float>()[i];
    if (saved.pre.defined()) {
      ASSERT_EQ(saved.pre.data<float>()[i], p) << i;
    }
    const real want = reference(act, p);
    ASSERT_LE(std::abs(saved.hidden.data<float>()[i] - want), forward_tolerance<float>(want, p)) << i;
  }
  const Tensor alone = ffn.forward(ctx, x, nullptr);  // the fused call: the same result
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(alone.data<float>()[i], y.data<float>()[i]) << i;
}

INSTANTIATE_TEST_SUITE_P(Activation, FeedForwardActivation, ::testing::ValuesIn(kAll), activation_test_name);

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(double(a.data<float>()[i]) - b.data<float>()[i]));
  return m;
}

class LinearActivation : public ::testing::TestWithParam<Activation> {};

// A linear layer's three product paths with each activation, at a feed-forward shape (40 outputs:
// packed at the avx512 level and above, the plain weight's product below it) and a wide one (8,195:
// packed at every level, in column blocks; beyond 256 rows the plain weight's product): the packed
// product with the activation as its post-op, and packed without bias or activation (the layer adds
// both after), both against the plain product within float32 rounding of `in` terms, as
// tests/packed_test.cc; int8, with the activation in its dequantization pass, against the activation
// of its own product without one (a few ulps) and against the plain product (2% relative, as
// tests/int8_test.cc; 7 rows take the column blocks, 300 the one product).
TEST_P(LinearActivation, PlainPackedAndInt8Agree) {
  const Activation act = GetParam();
  for (auto [in, out] : {std::pair<int64_t, int64_t>{64, 40}, {24, 8195}}) {
    ParamStore params;
    const Linear layer(params, "fc", in, out);
    params.allocate();
    const Tensor w = params.value(layer.weight), bias = params.value(layer.bias);
    w.copy_from(random_tensor(w.shape(), 60).to(DType::F32));
    bias.copy_from(random_tensor(bias.shape(), 61).to(DType::F32));
    const PackedWeights packed{{layer.weight, ops::pack_weight(w, bias, act)}};
    const PackedWeights bare{{layer.weight, ops::pack_weight(w)}};
    const Int8Weights int8{{layer.weight, ops::quantize_rows(w)}};
    const Context plain_ctx{&params}, packed_ctx{&params, nullptr, nullptr, &packed},
        bare_ctx{&params, nullptr, nullptr, &bare}, int8_ctx{&params, nullptr, &int8};
    for (int64_t rows : {7, 300}) {
      SCOPED_TRACE(::testing::Message() << rows << " rows, in " << in << ", out " << out);
      const Tensor x = random_tensor({rows, in}, 62 + rows, -2, 2).to(DType::F32);
      const Tensor plain = layer.forward(plain_ctx, x, act);
      // The plain product against the definition in double.
      const Tensor x64 = x.to(DType::F64), w64 = w.to(DType::F64);
      Tensor want = Tensor::zeros({rows, out}, DType::F64);
      ops::matmul(x64, w64, want, {.trans_b = true});
      ops::bias_add(want, bias.to(DType::F64), want);
      double worst = 0;
      for (int64_t i = 0; i < want.numel(); ++i)
        worst = std::max(worst, std::abs(double(reference(act, want.data<double>()[i])) - plain.data<float>()[i]));
      EXPECT_LT(worst, 1e-5 * in);

      EXPECT_LT(max_abs_diff(layer.forward(packed_ctx, x, act), plain), 1e-5 * in) << "packed";
      EXPECT_LT(max_abs_diff(layer.forward(bare_ctx, x, act), plain), 1e-5 * in) << "packed without bias";

      const Tensor q = layer.forward(int8_ctx, x, act), q_none = layer.forward(int8_ctx, x, Activation::kNone);
      Tensor q_after = Tensor::empty(q.shape());
      ops::activate(act, q_none, q_after);
      double err = 0, norm = 0;
      for (int64_t i = 0; i < q.numel(); ++i) {
        const float f = q.data<float>()[i], a = q_after.data<float>()[i], p = plain.data<float>()[i];
        ASSERT_NEAR(f, a, 8 * FLT_EPSILON * (std::abs(q_none.data<float>()[i]) + 1)) << i;
        err += (double(f) - p) * (double(f) - p);
        norm += double(p) * p;
      }
      EXPECT_LT(std::sqrt(err / norm), 0.02) << "int8";
    }
    // A weight packed with one activation serves no call that asks for another.
    if (act != Activation::kNone) {
      const Tensor x = random_tensor({3, in}, 70).to(DType::F32);
      for (Activation other : kAll) {
        if (other != act) {
          EXPECT_THROW(layer.forward(packed_ctx, x, other), Error) << ops::activation_name(other);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Activation, LinearActivation, ::testing::ValuesIn(kAll), activation_test_name);

// Against PyTorch (tools/make_fixtures.py's feed_forward: torch.relu, silu, gelu, x·sigmoid(1.702x),
// gelu(approximate="tanh")),
// in float64 and float32, tolerances as tests/torch_reference_test.cc's.
class TorchFeedForward : public ::testing::TestWithParam<DType> {
 protected:
  DType dt() const { return GetParam(); }
  ::testing::AssertionResult close(const Tensor& got, const Tensor& want) const {
    return dt() == DType::F64 ? testing::all_close(got, want, 1e-10, 1e-12) : testing::all_close(got, want, 1e-5, 1e-6);
  }
};

constexpr const char* kTorchNames[] = {"relu", "swish", "gelu", "gelu_sigmoid", "gelu_tanh"};

TEST_P(TorchFeedForward, Activations) {
  const testing::Fixture f = testing::load_fixture("feed_forward.json");
  const Tensor x = f.tensor("x", dt()), dy = f.tensor("dy", dt());
  for (const std::string name : kTorchNames) {
    SCOPED_TRACE(name);
    Activation act;
    ASSERT_TRUE(ops::parse_activation(name, &act));
    Tensor y = Tensor::empty(x.shape(), dt()), dx = Tensor::zeros(x.shape(), dt());
    ops::activate(act, x, y);
    EXPECT_TRUE(close(y, f.tensor("act:" + name + ":y")));
    ops::activation_backward(act, x, dy, dx);
    EXPECT_TRUE(close(dx, f.tensor("act:" + name + ":dx")));
  }
}

TEST_P(TorchFeedForward, Layer) {
  const testing::Fixture f = testing::load_fixture("feed_forward.json");
  const Tensor x = f.tensor("ffn_x", dt()), dy = f.tensor("ffn_dy", dt());
  for (const std::string name : kTorchNames) {
    SCOPED_TRACE(name);
    Activation act;
    ASSERT_TRUE(ops::parse_activation(name, &act));
    ParamStore params;
    const FeedForward ffn(params, "ffn", f.integer("d_model"), f.integer("d_ff"), act);
    params.allocate(dt());
    const std::pair<std::string, int> ids[] = {{"fc1.weight", ffn.fc1.weight}, {"fc1.bias", ffn.fc1.bias},
                                               {"fc2.weight", ffn.fc2.weight}, {"fc2.bias", ffn.fc2.bias}};
    for (const auto& [n, id] : ids) params.value(id).copy_from(f.tensor(n, dt()));
    const Context ctx{&params};
    FeedForward::Saved saved;
    EXPECT_TRUE(close(ffn.forward(ctx, x, &saved), f.tensor("ffn:" + name + ":y")));
    Tensor dx = Tensor::zeros(x.shape(), dt());
    ffn.backward(ctx, saved, dy, dx);
    EXPECT_TRUE(close(dx, f.tensor("ffn:" + name + ":dx")));
    for (const auto& [n, id] : ids) EXPECT_TRUE(close(params.grad(id), f.tensor("ffn:" + name + ":grad:" + n))) << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, TorchFeedForward, ::testing::Values(DType::F64, DType::F32),
                         [](const auto& info) { return std::string(name(info.param)); });

}  // namespace
}  // namespace tfm
