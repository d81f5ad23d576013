// The gated activation's CPU kernels (ops/gated.h): rows in parallel, the activation and its
// derivative from activation.h's runs (the same values as ops::activate and activation_backward).
#include <cstring>
#include <vector>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/activation.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

namespace {
// y = act(x) over n elements (y not x).
template <class T>
void activate_row(ops::Activation act, int64_t n, const T* x, T* y) {
  if (act == ops::Activation::kNone) {
    std::memcpy(y, x, sizeof(T) * static_cast<size_t>(n));
  } else if (act == ops::Activation::kRelu) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : T(0);
  } else {
    activate_run(act, n, x, y);
  }
}
// dx += dy · act′(pre) over n elements (ReLU's derivative at 0 taken as 0).
template <class T>
void activation_backward_row(ops::Activation act, int64_t n, const T* pre, const T* dy, T* dx) {
  if (act == ops::Activation::kNone) {
    for (int64_t i = 0; i < n; ++i) dx[i] += dy[i];
  } else if (act == ops::Activation::kRelu) {
    for (int64_t i = 0; i < n; ++i) dx[i] += pre[i] > 0 ? dy[i] : T(0);
  } else {
    activation_backward_run(act, n, pre, dy, dx);
  }
}
}  // namespace

template <class T>
void gated(int64_t rows, int64_t f, ops::Activation act, const T* pre, T* hidden) {
#pragma omp parallel for schedule(static) if (rows * f >= (1 << 14))
  for (int64_t r = 0; r < rows; ++r) {
    const T* gate = pre + r * 2 * f;
    const T* up = gate + f;
    T* h = hidden + r * f;
    activate_row(act, f, gate, h);
    for (int64_t i = 0; i < f; ++i) h[i] *= up[i];
  }
}

// Per row, into the thread's buffers first (dpre may be pre): dgate = (dh ⊙ up) ⊙ act′(gate),
// dup = act(gate) ⊙ dh.
template <class T>
void gated_backward(int64_t rows, int64_t f, ops::Activation act, const T* dhidden, const T* pre, T* dpre) {
#pragma omp parallel if (rows * f >= (1 << 14))
  {
    std::vector<T> dh_up(static_cast<size_t>(f)), dgate(static_cast<size_t>(f)), dup(static_cast<size_t>(f));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const T* gate = pre + r * 2 * f;
      const T* up = gate + f;
      const T* dh = dhidden + r * f;
      for (int64_t i = 0; i < f; ++i) {
        dh_up[i] = dh[i] * up[i];
        dgate[i] = 0;
      }
      activation_backward_row(act, f, gate, dh_up.data(), dgate.data());
      activate_row(act, f, gate, dup.data());
      T* out = dpre + r * 2 * f;
      for (int64_t i = 0; i < f; ++i) {
        out[i] = dgate[i];
        out[f + i] = dup[i] * dh[i];
      }
    }
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_GATED)

TFM_SIMD_END
