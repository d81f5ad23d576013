#include "layers/linear.h"

#include "ops/elementwise.h"
#include "ops/int8.h"
#include "ops/matmul.h"
#include "ops/packed.h"

namespace tfm {

Linear::Linear(ParamStore& params, const std::string& name, int64_t in_features, int64_t out_features)
    : weight(params.add(name + ".weight", {out_features, in_features})),
      bias(params.add(name + ".bias", {out_features})),
      in(in_features),
      out(out_features) {}

namespace {
Shape with_last(const Shape& s, int64_t last) {
  std::vector<int64_t> d = s.to_vector();
  d.back() = last;
  return Shape(d);
}
}  // namespace

Tensor Linear::forward(const Context& ctx, const Tensor& x, Activation act, const Tensor& residual) const {
  TFM_CHECK(x.rank() >= 1 && x.size(-1) == in, "linear layer expects inputs with last dim ", in, ", got shape ",
            x.shape());
  Tensor y = Tensor::empty(with_last(x.shape(), out), x.dtype(), x.device());
  ops::check_residual("linear layer", residual, y, act);
  if (const ops::QuantizedMatrix* q = ctx.int8_weight(weight)) {
    ops::matmul_int8(x, *q, y, ctx.value(bias), act);  // bias and activation join the dequantization pass
    if (residual.defined()) ops::add(residual, y, y);
    return y;
  }
  if (const ops::PackedMatrix* p = ctx.packed_weight(weight)) {
    // Packed with its bias and activation (Transformer::pack_weights) or without either.
    const bool packed_act = p->act != Activation::kNone;
    TFM_CHECK(!packed_act || (act == p->act && p->bias.defined()), "linear layer '", ctx.params->name(weight),
              "': its weight was packed with activation '", ops::activation_name(p->act), "', which ",
              act == p->act ? "would come before the bias"
                            : cat("this call does not ask for (it asks for '", ops::activation_name(act), "')"));
    if (p->bias.defined()) {
      ops::matmul_packed(x, *p, y, residual);  // a residual joins the product (act none, checked above)
      if (!packed_act) ops::activate(act, y, y);
    } else {
      ops::matmul_packed(x, *p, y);
      ops::bias_add(y, ctx.value(bias), y);
      ops::activate(act, y, y);
      if (residual.defined()) ops::add(residual, y, y);
    }
    return y;
  }
  ops::linear(x, ctx.value(weight), ctx.value(bias), act, y, ctx.products, residual);
  return y;
}

void Linear::backward(const Context& ctx, const Tensor& x, const Tensor& dy, const Tensor* dx) const {
  // dx += dy · W; dW += dyᵀ · x over all rows ([out, N] · [N, in]).
  ops::linear_backward(x, ctx.value(weight), dy, dx, ctx.grad(weight), ctx.grad(bias), ctx.products);
}

}  // namespace tfm
