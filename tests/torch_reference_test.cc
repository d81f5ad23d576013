// Our ops against PyTorch: forward outputs and gradients compared with the fixtures that
// tools/make_fixtures.py computed in float64 (tests/fixtures/*.json), in both float64 and float32.
//
// Tolerances, |got − want| ≤ atol + rtol·|want|:
//   float64: rtol 1e-10, atol 1e-12. Ours and torch differ only in summation order, ~1e-15 on
//            these O(1) values; anything past 1e-10 is a wrong formula, not rounding.
//   float32: rtol 1e-5, atol 1e-6. The inputs themselves are rounded to 24 bits (6e-8 relative); most
//            results land within ~1e-7, but the softmax row shifted by 90 loses 5e-6 to that rounding
//            alone (float32 values near 90 are 8e-6 apart).
// Backward ops accumulate (+=), so gradients start from zeros, and a second call must add the same
// gradient again: that catches a kernel that overwrites instead of accumulating.
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/adam.h"
#include "ops/attention.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/softmax.h"
#include "testing/fixture.h"

namespace tfm {

// Names the dtype in gtest's failure lines ("GetParam() = float32") instead of printing its bytes.
inline void PrintTo(DType t, std::ostream* os) { *os << name(t); }

namespace {

using testing::all_close;
using testing::Fixture;
using testing::load_fixture;

class TorchReference : public ::testing::TestWithParam<DType> {
 protected:
  DType dt() const { return GetParam(); }
  double rtol() const { return dt() == DType::F64 ? 1e-10 : 1e-5; }
  double atol() const { return dt() == DType::F64 ? 1e-12 : 1e-6; }

  ::testing::AssertionResult close(const Tensor& got, const Tensor& want, double factor = 1.0) const {
    return all_close(got, scaled(want, factor), rtol(), atol());
  }
  ::testing::AssertionResult close(double got, double want) const {
    if (std::abs(got - want) <= atol() + rtol() * std::abs(want)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << got << ", want " << want << " (diff " << got - want << ")";
  }
  static Tensor scaled(const Tensor& t, double factor) {
    Tensor s = t.to(DType::F64);
    for (int64_t i = 0; i < s.numel(); ++i) s.data<double>()[i] *= factor;
    return s;
  }
};

TEST_P(TorchReference, Attention) {
  const Fixture f = load_fixture("attention.json");
  for (const std::string c : {"no_mask", "padding", "causal", "causal_cache"}) {
    SCOPED_TRACE("case " + c);
    const Tensor q = f.tensor(c + ".q", dt()), k = f.tensor(c + ".k", dt()), v = f.tensor(c + ".v", dt());
    const Tensor want_probs = f.tensor(c + ".probs"), want_out = f.tensor(c + ".out");
    ops::AttentionArgs args;
    args.heads = static_cast<int>(f.integer("heads"));
    args.causal = f.boolean(c + ".causal");
    if (f.has(c + ".key_lengths")) args.key_lengths = f.tensor(c + ".key_lengths", DType::I32);

    const Tensor probs = Tensor::zeros(want_probs.shape(), dt()), out = Tensor::zeros(want_out.shape(), dt());
    ops::attention(q, k, v, args, probs, out);
    EXPECT_TRUE(close(probs, want_probs)) << "probs";
    EXPECT_TRUE(close(out, want_out)) << "out";
    // Masked keys must get exactly zero weight, not merely a tiny one.
    const std::vector<double> p = probs.to_doubles(), wp = want_probs.to_doubles();
    int64_t leaks = 0;
    for (size_t i = 0; i < p.size(); ++i) leaks += wp[i] == 0.0 && p[i] != 0.0;
    EXPECT_EQ(leaks, 0) << "masked keys with nonzero weight";

    const Tensor dout = f.tensor(c + ".dout", dt());
    const Tensor dq = Tensor::zeros(q.shape(), dt()), dk = Tensor::zeros(k.shape(), dt()),
                 dv = Tensor::zeros(v.shape(), dt());
    for (double times : {1.0, 2.0}) {
      ops::attention_backward(q, k, v, args, probs, dout, dq, dk, dv);
      EXPECT_TRUE(close(dq, f.tensor(c + ".dq"), times)) << "dq after " << times << " call(s)";
      EXPECT_TRUE(close(dk, f.tensor(c + ".dk"), times)) << "dk after " << times << " call(s)";
      EXPECT_TRUE(close(dv, f.tensor(c + ".dv"), times)) << "dv after " << times << " call(s)";
    }
  }
}

TEST_P(TorchReference, LayerNorm) {
  const Fixture f = load_fixture("layer_norm.json");
  const Tensor x = f.tensor("x", dt()), gamma = f.tensor("gamma", dt()), beta = f.tensor("beta", dt());
  const int64_t n = x.size(0);
  const Tensor y = Tensor::zeros(x.shape(), dt()), mean = Tensor::zeros({n}, dt()), rstd = Tensor::zeros({n}, dt());
  ops::layer_norm(x, gamma, beta, f.number("eps"), y, mean, rstd);
  EXPECT_TRUE(close(y, f.tensor("y"))) << "y";
  EXPECT_TRUE(close(mean, f.tensor("mean"))) << "mean";
  EXPECT_TRUE(close(rstd, f.tensor("rstd"))) << "rstd";

  const Tensor dy = f.tensor("dy", dt());
  const Tensor dx = Tensor::zeros(x.shape(), dt()), dgamma = Tensor::zeros(gamma.shape(), dt()),
               dbeta = Tensor::zeros(beta.shape(), dt());
  for (double times : {1.0, 2.0}) {
    ops::layer_norm_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
    EXPECT_TRUE(close(dx, f.tensor("dx"), times)) << "dx after " << times << " call(s)";
    EXPECT_TRUE(close(dgamma, f.tensor("dgamma"), times)) << "dgamma after " << times << " call(s)";
    EXPECT_TRUE(close(dbeta, f.tensor("dbeta"), times)) << "dbeta after " << times << " call(s)";
  }
}

TEST_P(TorchReference, CrossEntropy) {
  const Fixture f = load_fixture("loss.json");
  const Tensor logits = f.tensor("logits", dt()), targets = f.tensor("targets", DType::I32);
  const ops::LossArgs args{f.number("smoothing"), static_cast<int32_t>(f.integer("ignore_index"))};
  const Tensor lse = Tensor::zeros({logits.size(0)}, dt());
  const ops::LossSum r = ops::cross_entropy(logits, targets, args, lse);
  EXPECT_EQ(r.tokens, f.integer("tokens"));
  EXPECT_TRUE(close(r.loss, f.number("loss_sum"))) << "loss (sum)";
  EXPECT_TRUE(close(r.loss / static_cast<double>(r.tokens), f.number("loss_mean"))) << "loss (mean)";

  // dloss = 1 gives the gradient of the sum; dloss = 1 / tokens that of torch's mean reduction.
  const Tensor dlogits = Tensor::zeros(logits.shape(), dt());
  for (double times : {1.0, 2.0}) {
    ops::cross_entropy_backward(logits, targets, lse, args, 1.0, dlogits);
    EXPECT_TRUE(close(dlogits, f.tensor("dlogits"), times)) << "dlogits of the sum after " << times << " call(s)";
  }
  const Tensor dmean = Tensor::zeros(logits.shape(), dt());
  ops::cross_entropy_backward(logits, targets, lse, args, 1.0 / static_cast<double>(r.tokens), dmean);
  EXPECT_TRUE(close(dmean, f.tensor("dlogits_mean"))) << "dlogits of the mean";
}

TEST_P(TorchReference, Softmax) {
  const Fixture f = load_fixture("softmax.json");
  const Tensor x = f.tensor("x", dt()), y = Tensor::zeros(x.shape(), dt());
  ops::softmax(x, y);
  EXPECT_TRUE(close(y, f.tensor("y"))) << "y";
  const Tensor dy = f.tensor("dy", dt()), dx = Tensor::zeros(x.shape(), dt());
  for (double times : {1.0, 2.0}) {
    ops::softmax_backward(y, dy, dx);
    EXPECT_TRUE(close(dx, f.tensor("dx"), times)) << "dx after " << times << " call(s)";
  }
}

TEST_P(TorchReference, Adam) {
  const Fixture f = load_fixture("adam.json");
  const Tensor params = f.tensor("params", dt()), grads = f.tensor("grads", dt());
  const Tensor want = f.tensor("params_after");
  const int64_t n = params.numel();
  const Tensor m = Tensor::zeros(params.shape(), dt()), v = Tensor::zeros(params.shape(), dt());
  ops::AdamArgs args{f.number("lr"), f.number("beta1"), f.number("beta2"), f.number("eps")};
  for (int64_t t = 0; t < f.integer("steps"); ++t) {
    args.step = t + 1;
    ops::adam_step(params, grads.rows(t, 1).view({n}), m, v, args);
    EXPECT_TRUE(close(params, want.rows(t, 1).view({n}))) << "params after step " << t + 1;
  }
  // The moments span 1e-20..1e2 (gradients from 1e-9 to 10): compare them relatively only.
  EXPECT_TRUE(all_close(m, f.tensor("m"), rtol(), 0.0)) << "first moment";
  EXPECT_TRUE(all_close(v, f.tensor("v"), rtol(), 0.0)) << "second moment";
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TorchReference, ::testing::Values(DType::F32, DType::F64),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(name(info.param)); });

}  // namespace
}  // namespace tfm
