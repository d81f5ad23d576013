#pragma once
// Layer normalization (Ba et al., 2016) over the last dim D:
//   y = (x − mean) · rstd · gamma + beta,  rstd = 1 / sqrt(var + eps),  var biased (÷ D).
#include "core/tensor.h"

namespace tfm::ops {

// x, y: [N, D]; gamma, beta: [D]; mean, rstd: [N] (saved for the backward). y may alias x.
void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& y,
                const Tensor& mean, const Tensor& rstd);

// With x̂ = (x − mean)·rstd and g = dy·gamma:
//   dx += rstd · (g − mean_D(g) − x̂ · mean_D(g · x̂)),  dgamma += Σ_n dy·x̂,  dbeta += Σ_n dy.
void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta);

}  // namespace tfm::ops
