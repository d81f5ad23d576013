#pragma once
// Softmax over the last dim: y[n, c] = exp(x[n, c] − max_c x) / Σ_c exp(x[n, c] − max_c x).
#include "core/tensor.h"

namespace tfm::ops {

// x, y: [N, C]; y may alias x.
void softmax(const Tensor& x, const Tensor& y);
// dx += y ⊙ (dy − Σ_c dy ⊙ y), from the forward output y.
void softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx);

}  // namespace tfm::ops
