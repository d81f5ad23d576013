#pragma once
// Root-mean-square layer normalization (Zhang and Sennrich, 2019) over the last dim D: layer norm
// without the mean's subtraction and without a bias (Llama, T5):
//   y = x · rstd · gamma,  rstd = 1 / sqrt(mean_D(x²) + eps).
#include "core/tensor.h"

namespace tfm::ops {

// x, y: [N, D] (any leading dims); gamma: [D]; rstd: [N] (saved for the backward). y may alias x.
void rms_norm(const Tensor& x, const Tensor& gamma, double eps, const Tensor& y, const Tensor& rstd);

// With x̂ = x·rstd and g = dy·gamma (d rstd / dx = −rstd³·x / D):
//   dx += rstd · (g − x̂ · mean_D(g · x̂)),  dgamma += Σ_n dy·x̂.
void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd, const Tensor& dx,
                       const Tensor& dgamma);

}  // namespace tfm::ops
