#pragma once
// The product of activations with a weight in any of its forms (ops/weight.h): what linear layers,
// fused projections and the output projection call, the form choosing the kernel (ops/matmul.h,
// ops/packed.h, ops/int8.h) and the device its backend.
#include "core/tensor.h"
#include "ops/activation.h"
#include "ops/weight.h"

namespace tfm::ops {

struct ProductArgs {
  // float32 [out] added to the product, or undefined. A weight that holds a bias of its own (packed
  // with it, or a fused product's) adds that one instead.
  Tensor bias = {};
  Activation act = Activation::kNone;  // after the bias
  // Shaped as y, not y (act none): y = residual + the product, in the product's own call where the
  // form allows (ops::linear, ops::matmul_packed), else added after it.
  Tensor residual = {};
  const char* op = "product";  // what the messages name
};

// y = act(x · Wᵀ + bias) (+ residual): x [N, in] (N all leading dims) → y [N, out]. Each form's
// kernel takes the bias and the activation in its last pass over y where it can:
//   plain: ops::linear (on a GPU one cuBLASLt product with them in its epilogue), or ops::matmul
//          alone without a bias; in the weight's precision.
//   packed: ops::matmul_packed, with the bias and activation it was packed with; a weight packed
//          with an activation refuses a call that asks for another.
//   int8: ops::matmul_int8, the bias and activation in its dequantization pass.
void product(const Tensor& x, const Weight& w, const Tensor& y, const ProductArgs& args = {});
// The same into a new tensor [..., out] of x's dtype (float32 for bfloat16 x), on x's device.
Tensor product(const Tensor& x, const Weight& w, const ProductArgs& args = {});

// Where a product's gradients go, accumulated (+=): dx [N, in] (null: not wanted), dw [out, in],
// dbias [out] (undefined: the product had no bias).
struct ProductGrads {
  const Tensor* dx = nullptr;
  Tensor dw = {};
  Tensor dbias = {};
};

// Gradients of y = x · Wᵀ (+ bias) from dy, for a weight in a plain form (differentiable()), in
// its precision: ops::linear_backward with a bias, ops::matmul_backward without.
void product_backward(const Tensor& x, const Weight& w, const Tensor& dy, const ProductGrads& grads);

}  // namespace tfm::ops
