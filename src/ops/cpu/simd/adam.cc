#include <cmath>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

template <class T>
void adam_step(int64_t n, T* params, const T* grads, T* m, T* v, double lr, double beta1, double beta2, double eps,
               int64_t step) {
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const T step_size = static_cast<T>(lr / bc1), inv_sqrt_bc2 = static_cast<T>(1.0 / std::sqrt(bc2));
  const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2), e = static_cast<T>(eps);
#pragma omp parallel for simd schedule(static) if (n >= (1 << 15))
  for (int64_t i = 0; i < n; ++i) {
    const T g = grads[i];
    m[i] = b1 * m[i] + (T(1) - b1) * g;
    v[i] = b2 * v[i] + (T(1) - b2) * g * g;
    params[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + e);
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_ADAM)

TFM_SIMD_END
