#pragma once
// Adam (Kingma & Ba, 2015) in PyTorch's arithmetic, over flat buffers (the parameter store's):
//   m ← β1·m + (1−β1)·g,   v ← β2·v + (1−β2)·g²,
//   p ← p − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + ε).
#include <cstdint>

#include "core/tensor.h"

namespace tfm::ops {

struct AdamArgs {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.98;  // the paper's β2
  double eps = 1e-9;    // the paper's ε
  int64_t step = 1;     // t, counted from 1
};

// params, grads, m, v: same shape (any; treated as flat).
void adam_step(const Tensor& params, const Tensor& grads, const Tensor& m, const Tensor& v, const AdamArgs& args);

}  // namespace tfm::ops
