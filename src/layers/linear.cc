#include "layers/linear.h"

#include "ops/product.h"

namespace tfm {

Linear::Linear(ParamStore& params, const std::string& name, int64_t in_features, int64_t out_features,
               bool has_bias)
    : weight(params.add(name + ".weight", {out_features, in_features})),
      bias(has_bias ? params.add(name + ".bias", {out_features}) : -1),
      in(in_features),
      out(out_features) {}

Tensor Linear::forward(const Context& ctx, const Tensor& x, Activation act, const Tensor& residual) const {
  TFM_CHECK(x.rank() >= 1 && x.size(-1) == in, "linear layer expects inputs with last dim ", in, ", got shape ",
            x.shape());
  return ops::product(x, ctx.weight(weight),
                      {.bias = bias >= 0 ? ctx.value(bias) : Tensor(), .act = act, .residual = residual, .op = "linear layer"});
}

void Linear::backward(const Context& ctx, const Tensor& x, const Tensor& dy, const Tensor* dx) const {
  // dx += dy · W; dW += dyᵀ · x over all rows ([out, N] · [N, in]).
  ops::product_backward(x, ctx.weight(weight), dy, {.dx = dx, .dw = ctx.grad(weight), .dbias = bias >= 0 ? ctx.grad(bias) : Tensor()});
}

}  // namespace tfm
