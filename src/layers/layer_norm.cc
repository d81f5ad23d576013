#include "layers/layer_norm.h"

#include "ops/layer_norm.h"

namespace tfm {

LayerNorm::LayerNorm(ParamStore& params, const std::string& name, int64_t width, double epsilon)
    : gain(params.add(name + ".weight", {width})), bias(params.add(name + ".bias", {width})), d(width), eps(epsilon) {}

Tensor LayerNorm::forward(const Context& ctx, const Tensor& x, Saved* saved) const {
  const int64_t rows = x.shape().rows();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());  // [N, D], as x
  // [N] each
  Tensor mean = Tensor::empty({rows}, x.dtype(), x.device()), rstd = Tensor::empty({rows}, x.dtype(), x.device());
  ops::layer_norm(x, ctx.value(gain), ctx.value(bias), eps, y, mean, rstd);
  if (saved) *saved = {x, mean, rstd};
  return y;
}

void LayerNorm::backward(const Context& ctx, const Saved& saved, const Tensor& dy, const Tensor& dx) const {
  ops::layer_norm_backward(dy, saved.x, ctx.value(gain), saved.mean, saved.rstd, dx, ctx.grad(gain), ctx.grad(bias));
}

}  // namespace tfm
