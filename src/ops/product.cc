// ops::product and its backward: the weight's form picks the kernel.
#include "ops/product.h"

#include "ops/elementwise.h"

namespace tfm::ops {

namespace {
// ops::linear with a bias (its epilogue on a GPU); without one the product alone, then what follows.
void plain_product(const Tensor& x, const Weight& w, const Tensor& y, const ProductArgs& args) {
  if (args.bias.defined()) {
    linear(x, w.values(), args.bias, args.act, y, w.precision(), args.residual);
    return;
  }
  matmul(x, w.values(), y, {.trans_b = true, .precision = w.precision()});
  activate(args.act, y, y);
  if (args.residual.defined()) add(args.residual, y, y);
}

// Packed with its bias and activation (Transformer::pack_weights) or without either.
void packed_product(const Tensor& x, const Weight& w, const Tensor& y, const ProductArgs& args) {
  const PackedMatrix& p = *w.as_packed();
  const bool packed_act = p.act != Activation::kNone;
  TFM_CHECK(!packed_act || (args.act == p.act && p.bias.defined()), args.op, " '", w.name(),
            "': its weight was packed with activation '", activation_name(p.act), "', which ",
            args.act == p.act ? "would come before the bias"
                              : cat("this call does not ask for (it asks for '", activation_name(args.act), "')"));
  if (p.bias.defined()) {
    matmul_packed(x, p, y, args.residual);  // a residual joins the product (act none, checked by the caller)
    if (!packed_act) activate(args.act, y, y);
    return;
  }
  matmul_packed(x, p, y);
  if (args.bias.defined()) bias_add(y, args.bias, y);
  activate(args.act, y, y);
  if (args.residual.defined()) add(args.residual, y, y);
}

// The bias and activation join the dequantization pass.
void int8_product(const Tensor& x, const Weight& w, const Tensor& y, const ProductArgs& args) {
  const QuantizedMatrix& q = *w.as_int8();
  matmul_int8(x, q, y, q.bias.defined() ? Tensor() : args.bias, args.act);
  if (args.residual.defined()) add(args.residual, y, y);
}
}  // namespace

void product(const Tensor& x, const Weight& w, const Tensor& y, const ProductArgs& args) {
  check_residual(args.op, args.residual, y, args.act);
  switch (w.form()) {
    case WeightForm::kFloat32:
    case WeightForm::kBf16: return plain_product(x, w, y, args);
    case WeightForm::kPacked: return packed_product(x, w, y, args);
    case WeightForm::kInt8: return int8_product(x, w, y, args);
    case WeightForm::kNone: break;
  }
  throw Error(cat(args.op, ": no weight"));
}

Tensor product(const Tensor& x, const Weight& w, const ProductArgs& args) {
  TFM_CHECK(w.defined(), args.op, ": no weight");
  std::vector<int64_t> dims = x.shape().to_vector();
  TFM_CHECK(!dims.empty(), args.op, ": a product of a scalar");
  dims.back() = w.out();
  // Bfloat16 activations (Context::product_input) make float32 outputs.
  Tensor y = Tensor::empty(Shape(dims), x.dtype() == DType::BF16 ? DType::F32 : x.dtype(), x.device());
  product(x, w, y, args);
  return y;
}

void product_backward(const Tensor& x, const Weight& w, const Tensor& dy, const ProductGrads& grads) {
  TFM_CHECK(w.differentiable(), "product_backward: the weight '", w.name(),
            "' is not in a plain form: gradients need its float32 values");
  if (grads.dbias.defined()) {
    linear_backward(x, w.values(), dy, grads.dx, grads.dw, grads.dbias, w.precision());
    return;
  }
  matmul_backward(x, w.values(), dy, grads.dx, &grads.dw, {.trans_b = true, .precision = w.precision()});
}

}  // namespace tfm::ops
