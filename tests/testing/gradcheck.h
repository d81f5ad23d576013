#pragma once
// Finite-difference checks of backward passes, in double precision.
//
// An op's forward y = f(x1, x2, ...) is reduced to a scalar L = Σ w ⊙ y with fixed random weights
// w, so dL/dy = w is the upstream gradient given to the backward. Each input element is then
// nudged by ±h and the central difference (L(x+h) − L(x−h)) / 2h compared with the backward's
// gradient: |numeric − analytic| ≤ atol + rtol · |numeric|.
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tfm::testing {

// A float64 tensor of the given shape with values uniform in [lo, hi), from a seeded generator.
Tensor random_tensor(Shape shape, uint64_t seed, double lo = -1.0, double hi = 1.0);

// Σ w ⊙ y over all elements (same shapes).
double weighted_sum(const Tensor& y, const Tensor& w);

struct GradInput {
  std::string name;
  Tensor value;     // float64, perturbed in place during the check, restored after
  Tensor gradient;  // float64, the backward's result for this input
};

struct GradCheckOptions {
  double step = 1e-6;
  double atol = 1e-8;
  double rtol = 1e-6;
};

// Compares each input's gradient with central differences of `loss` (which recomputes the forward
// from the inputs' current values). Reports every mismatch through GoogleTest, with the input's
// name, the element index and both values.
void expect_gradients_match(const std::function<double()>& loss, const std::vector<GradInput>& inputs,
                            const GradCheckOptions& options = {});

}  // namespace tfm::testing
