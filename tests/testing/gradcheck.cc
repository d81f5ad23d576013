#include "testing/gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"

namespace tfm::testing {

Tensor random_tensor(Shape shape, uint64_t seed, double lo, double hi) {
  Tensor t = Tensor::empty(shape, DType::F64);
  const RngStream rng{seed, 0x7e57};
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = lo + (hi - lo) * rng.uniform(static_cast<uint64_t>(i));
  return t;
}

double weighted_sum(const Tensor& y, const Tensor& w) {
  check_same_shape("weighted_sum", "y", y, "w", w);
  const std::vector<double> a = y.to_doubles(), b = w.to_doubles();
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

void expect_gradients_match(const std::function<double()>& loss, const std::vector<GradInput>& inputs,
                            const GradCheckOptions& options) {
  for (const GradInput& in : inputs) {
    ASSERT_EQ(in.value.dtype(), DType::F64) << in.name;
    ASSERT_EQ(in.value.shape(), in.gradient.shape()) << in.name;
    double* x = in.value.data<double>();
    const std::vector<double> analytic = in.gradient.to_doubles();
    int failures = 0;
    for (int64_t i = 0; i < in.value.numel(); ++i) {
      const double saved = x[i];
      x[i] = saved + options.step;
      const double plus = loss();
      x[i] = saved - options.step;
      const double minus = loss();
      x[i] = saved;
      const double numeric = (plus - minus) / (2 * options.step);
      const double err = std::abs(numeric - analytic[i]);
      if (!(err <= options.atol + options.rtol * std::abs(numeric)) && failures++ < 10)
        ADD_FAILURE() << "gradient of " << in.name << "[" << i << "]: backward " << analytic[i]
                      << ", finite difference " << numeric << " (error " << err << ")";
    }
    EXPECT_EQ(failures, 0) << failures << " of " << in.value.numel() << " elements of d/d" << in.name << " differ";
  }
}

}  // namespace tfm::testing
