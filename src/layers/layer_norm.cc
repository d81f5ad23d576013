#include "layers/layer_norm.h"

#include "core/error.h"
#include "ops/layer_norm.h"
#include "ops/rms_norm.h"

namespace tfm {

NormKind parse_norm_kind(const std::string& name) {
  if (name == "layernorm") return NormKind::kLayerNorm;
  TFM_CHECK(name == "rmsnorm", "unknown norm '", name, "' (known: layernorm, rmsnorm)");
  return NormKind::kRmsNorm;
}

LayerNorm::LayerNorm(ParamStore& params, const std::string& name, int64_t width, double epsilon, NormKind k)
    : gain(params.add(name + ".weight", {width})),
      bias(k == NormKind::kLayerNorm ? params.add(name + ".bias", {width}) : -1),
      d(width),
      eps(epsilon),
      kind(k) {}

Tensor LayerNorm::forward(const Context& ctx, const Tensor& x, Saved* saved) const {
  const int64_t rows = x.shape().rows();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());  // [N, D], as x
  Tensor rstd = Tensor::empty({rows}, x.dtype(), x.device()), mean;  // [N] each
  if (kind == NormKind::kRmsNorm) {
    ops::rms_norm(x, ctx.value(gain), eps, y, rstd);
  } else {
    mean = Tensor::empty({rows}, x.dtype(), x.device());
    ops::layer_norm(x, ctx.value(gain), ctx.value(bias), eps, y, mean, rstd);
  }
  if (saved) *saved = {x, mean, rstd};
  return y;
}

void LayerNorm::backward(const Context& ctx, const Saved& saved, const Tensor& dy, const Tensor& dx) const {
  if (kind == NormKind::kRmsNorm)
    ops::rms_norm_backward(dy, saved.x, ctx.value(gain), saved.rstd, dx, ctx.grad(gain));
  else
    ops::layer_norm_backward(dy, saved.x, ctx.value(gain), saved.mean, saved.rstd, dx, ctx.grad(gain), ctx.grad(bias));
}

}  // namespace tfm
