#include "layers/feed_forward.h"

#include "ops/elementwise.h"
#include "ops/gated.h"

namespace tfm {

FeedForward::FeedForward(ParamStore& params, const std::string& name, int64_t d_model, int64_t d_ff,
                         ops::Activation act, bool bias, bool is_gated)
    : fc1(params, name + ".fc1", d_model, (is_gated ? 2 : 1) * d_ff, bias),
      fc2(params, name + ".fc2", d_ff, d_model, bias),
      activation(act),
      gated(is_gated) {}

Tensor FeedForward::forward(const Context& ctx, const Tensor& x_in, Saved* saved, const Tensor& residual) const {
  const Tensor x = ctx.product_input(x_in);  // [B, L, D]: what fc1 reads, and its backward
  if (gated) {
    const Tensor pre = fc1.forward(ctx, x);  // [B, L, 2F]
    std::vector<int64_t> dims = pre.shape().to_vector();
    dims.back() = fc2.in;
    Tensor hidden = Tensor::empty(Shape(dims), pre.dtype(), pre.device());  // [B, L, F]
    ops::gated(pre, activation, hidden);
    hidden = ctx.product_input(hidden);
    Tensor y = fc2.forward(ctx, hidden, Activation::kNone, residual);  // [B, L, D]
    if (saved) *saved = {x, hidden, pre};
    return y;
  }
  // The activation joins fc1's call (its int8 or packed product's last pass), except where a
  // backward will need its input (a plain weight's, with gradients): then fc1 without it, and the
  // activation into a tensor of its own.
  const bool keep_pre = saved && activation != Activation::kRelu && activation != Activation::kNone &&
                        ctx.weight(fc1.weight).differentiable();
  Tensor pre, hidden;  // [B, L, F]
  if (keep_pre) {
    pre = fc1.forward(ctx, x);
    hidden = Tensor::empty(pre.shape(), pre.dtype(), pre.device());
    ops::activate(activation, pre, hidden);
  } else {
    hidden = fc1.forward(ctx, x, activation);
    if (activation == Activation::kNone) pre = hidden;
  }
  // ReLU's backward reads it too: in bfloat16 the same signs, but for values below 2^-133, which
  // round to 0 and pass no gradient.
  hidden = ctx.product_input(hidden);
  Tensor y = fc2.forward(ctx, hidden, Activation::kNone, residual);  // [B, L, D]
  if (saved) *saved = {x, hidden, pre};
  return y;
}

void FeedForward::backward(const Context& ctx, const Saved& s, const Tensor& dy, const Tensor& dx) const {
  Tensor dhidden = Tensor::zeros(s.hidden.shape(), dy.dtype(), dy.device());  // [B, L, F]
  fc2.backward(ctx, s.hidden, dy, &dhidden);
  if (gated) {
    TFM_CHECK(s.pre.defined(), "feed-forward backward (gated): the forward kept no input to its activation");
    Tensor dpre = Tensor::empty(s.pre.shape(), dy.dtype(), dy.device());  // [B, L, 2F], written by the op
    ops::gated_backward(dhidden, s.pre, activation, dpre);
    fc1.backward(ctx, s.x, dpre, &dx);
    return;
  }
  Tensor dpre = Tensor::zeros(s.hidden.shape(), dy.dtype(), dy.device());  // [B, L, F]
  if (activation == Activation::kRelu) {
    ops::relu_backward(s.hidden, dhidden, dpre);
  } else {
    TFM_CHECK(s.pre.defined(), "feed-forward backward (", ops::activation_name(activation),
              "): the forward kept no input to its activation (an int8 or packed product's)");
    ops::activation_backward(activation, s.pre, dhidden, dpre);
  }
  fc1.backward(ctx, s.x, dpre, &dx);
}

}  // namespace tfm
