// Adam over flat buffers (ops/adam.h), in the CPU kernel's arithmetic.
#include <cmath>

#include "ops/cuda/common.cuh"
#include "ops/cuda/for_each.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {

void adam_step(int64_t n, float* params, const float* grads, float* m, float* v, double lr, double beta1,
               double beta2, double eps, int64_t step) {
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const auto step_size = static_cast<float>(lr / bc1), inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const auto b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2), e = static_cast<float>(eps);
  for_each("adam_step", n, [=] __device__(int64_t i) {
    const float g = grads[i];
    m[i] = b1 * m[i] + (1.0f - b1) * g;
    v[i] = b2 * v[i] + (1.0f - b2) * g * g;
    params[i] -= step_size * m[i] / (sqrtf(v[i]) * inv_sqrt_bc2 + e);
  });
}

}  // namespace tfm::cuda
