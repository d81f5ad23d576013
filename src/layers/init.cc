#include "layers/init.h"

#include <cmath>
#include <numbers>

namespace tfm {

namespace {
template <class F>
void fill_each(const Tensor& t, F value) {
  TFM_CHECK(t.device() == Device::CPU, "parameter initialisation runs on the CPU, got a ", name(t.device()),
            " tensor");
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double x = value(static_cast<uint64_t>(i));
    if (t.dtype() == DType::F32) t.data<float>()[i] = static_cast<float>(x);
    else t.data<double>()[i] = x;
  }
}
}  // namespace

void init_uniform(const Tensor& t, double a, const RngStream& rng) {
  fill_each(t, [&](uint64_t i) { return a * (2.0 * rng.uniform(i) - 1.0); });
}

void init_normal(const Tensor& t, double std, const RngStream& rng) {
  fill_each(t, [&](uint64_t i) {
    // Two uniforms per value: u1 in (0, 1] so the log is finite.
    const double u1 = 1.0 - rng.uniform(2 * i), u2 = rng.uniform(2 * i + 1);
    return std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  });
}

void init_xavier_uniform(const Tensor& weight, const RngStream& rng) {
  TFM_CHECK(weight.rank() == 2, "xavier init needs a matrix, got shape ", weight.shape());
  init_uniform(weight, std::sqrt(6.0 / static_cast<double>(weight.size(0) + weight.size(1))), rng);
}

}  // namespace tfm
