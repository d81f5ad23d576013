#pragma once
// A sub-layer F wrapped in its residual connection, norm (layer norm or RMSNorm) and dropout (§3.1, §5.4):
//   post-LN (the paper):  y = LayerNorm(x + Dropout(F(x)))
//   pre-LN:               y = x + Dropout(F(LayerNorm(x)))
// F is passed in as a callable, so one wrapper serves self-attention, encoder-decoder attention
// and the feed-forward network.
#include <string>
#include <type_traits>

#include "layers/layer_norm.h"
#include "ops/elementwise.h"

namespace tfm {

class Residual {
 public:
  struct Saved {
    LayerNorm::Saved norm;
    RngStream dropout;  // the stream of the dropout on F's output
    bool dropped = false;
  };

  Residual() = default;
  Residual(ParamStore& params, const std::string& norm_name, int64_t d_model, double eps, bool pre_norm,
           double dropout, NormKind kind = NormKind::kLayerNorm)
      : norm(params, norm_name, d_model, eps, kind), pre_norm(pre_norm), dropout(dropout) {}

  // f(input) → F's output, same shape as x. Or f(input, r) → r + F(input) when r is defined and
  // F(input) when not: F's last product then adds the residual in its own call (Linear::forward's
  // residual; on a GPU one pass fewer), which the wrapper asks for where no dropout comes between.
  template <class F>
  Tensor forward(const Context& ctx, const Tensor& x, F&& f, Saved* saved) const {
    Saved local;
    Saved& s = saved ? *saved : local;
    // What F sees: x (post-LN) or LayerNorm(x) (pre-LN), [B, L, D]. F keeps what its backward
    // needs (in bf16 training a bfloat16 copy), so this float32 tensor is not kept here.
    const Tensor f_input = pre_norm ? norm.forward(ctx, x, &s.norm) : x;
    s.dropped = ctx.training() && dropout > 0;
    Tensor h;  // F's output, then the residual sum: [B, L, D]
    if constexpr (std::is_invocable_v<F, const Tensor&, const Tensor&>) {
      h = f(f_input, s.dropped ? Tensor() : x);
    } else {
      h = f(f_input);
    }
    if (s.dropped) {
      s.dropout = ctx.rng->next();
      ops::dropout(h, dropout, s.dropout, h);
    }
    if (s.dropped || !std::is_invocable_v<F, const Tensor&, const Tensor&>)
      ops::add(x, h, h);  // h = x + Dropout(F(·))
    return pre_norm ? h : norm.forward(ctx, h, &s.norm);
  }

  // f_backward(dF_out, dF_in) accumulates F's parameter gradients and dF_in += dL/d(F's input).
  // Returns dL/dx.
  template <class FB>
  Tensor backward(const Context& ctx, const Saved& s, const Tensor& dy, FB&& f_backward) const {
    Tensor dsum = dy;  // gradient at the residual sum: [B, L, D]
    if (!pre_norm) {
      dsum = Tensor::zeros(dy.shape(), dy.dtype(), dy.device());
      norm.backward(ctx, s.norm, dy, dsum);
    }
    Tensor dx = dsum.clone();  // the identity branch: [B, L, D]
    // Dropout is linear with a fixed mask: its backward is the same map applied to the gradient.
    Tensor dh = dsum.clone();  // [B, L, D]
    if (s.dropped) ops::dropout(dh, dropout, s.dropout, dh);
    if (pre_norm) {
      Tensor dnormed = Tensor::zeros(dy.shape(), dy.dtype(), dy.device());  // [B, L, D]
      f_backward(dh, dnormed);
      norm.backward(ctx, s.norm, dnormed, dx);
    } else {
      f_backward(dh, dx);
    }
    return dx;
  }

  LayerNorm norm;
  bool pre_norm = false;
  double dropout = 0.0;
};

}  // namespace tfm
