#pragma once
// y = x · Wᵀ + b, with W stored [out, in] as PyTorch stores it.
#include <string>

#include "layers/context.h"
#include "ops/activation.h"

namespace tfm {

// What follows the product and its bias in the same call (ops/activation.h): int8 and packed
// products take it in their last pass over the output.
using ops::Activation;

class Linear {
 public:
  Linear() = default;
  // Registers `<name>.weight` [out, in] and, with has_bias, `<name>.bias` [out] (else none: bias −1).
  Linear(ParamStore& params, const std::string& name, int64_t in, int64_t out, bool has_bias = true);

  // x: [..., in] → y: [..., out] (a new tensor), y = act(x · Wᵀ + b); with a residual r [..., out]
  // (act none): y = r + (x · Wᵀ + b), the sum of a residual connection, on a GPU in the product's own
  // call. The weight's form (Context::weight) picks the product's kernel (ops::product).
  Tensor forward(const Context& ctx, const Tensor& x, Activation act = Activation::kNone,
                 const Tensor& residual = Tensor()) const;
  // dW += dyᵀ·x, db += Σ dy, and dx += dy·W when dx is given.
  void backward(const Context& ctx, const Tensor& x, const Tensor& dy, const Tensor* dx) const;

  int weight = -1, bias = -1;  // parameter ids (bias −1: none)
  int64_t in = 0, out = 0;
};

}  // namespace tfm
