#include "layers/feed_forward.h"

#include "ops/elementwise.h"

namespace tfm {

FeedForward::FeedForward(ParamStore& params, const std::string& name, int64_t d_model, int64_t d_ff)
    : fc1(params, name + ".fc1", d_model, d_ff), fc2(params, name + ".fc2", d_ff, d_model) {}

Tensor FeedForward::forward(const Context& ctx, const Tensor& x, Saved* saved) const {
  Tensor hidden = fc1.forward(ctx, x, Activation::kRelu);
  Tensor y = fc2.forward(ctx, hidden);
  if (saved) *saved = {x, hidden};
  return y;
}

void FeedForward::backward(const Context& ctx, const Saved& s, const Tensor& dy, const Tensor& dx) const {
  Tensor dhidden = Tensor::zeros(s.hidden.shape(), dy.dtype(), dy.device());
  fc2.backward(ctx, s.hidden, dy, &dhidden);
  Tensor dpre = Tensor::zeros(s.hidden.shape(), dy.dtype(), dy.device());
  ops::relu_backward(s.hidden, dhidden, dpre);
  fc1.backward(ctx, s.x, dpre, &dx);
}

}  // namespace tfm
