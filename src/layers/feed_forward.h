#pragma once
// Position-wise feed-forward network (§3.3): FFN(x) = act(x·W1ᵀ + b1)·W2ᵀ + b2, act the paper's ReLU
// or another of ops/activation.h (swish for OPUS-MT's Marian models, gelu for Hugging Face's).
// Gated (ops/gated.h): fc1 gives 2F columns, hidden = act(the first F) ⊙ the last F (SwiGLU, GeGLU).
#include <string>

#include "layers/linear.h"

namespace tfm {

class FeedForward {
 public:
  struct Saved {
    Tensor x;       // input: [B, L, D]
    Tensor hidden;  // after the activation: [B, L, F]
    // before it, x·W1ᵀ + b1: [B, L, F] ([B, L, 2F] gated), for the backward of every activation
    // but ReLU (whose backward reads `hidden`, so a ReLU layer keeps one [B, L, F] tensor as
    // before) and of every gated layer; `hidden` itself for kNone. Undefined where fc1's product
    // was an int8 or packed one (inference).
    Tensor pre;
  };

  FeedForward() = default;
  // Registers `<name>.fc1` (D → F, or D → 2F gated: the gate's rows first) and `<name>.fc2`
  // (F → D), with biases when `bias`.
  FeedForward(ParamStore& params, const std::string& name, int64_t d_model, int64_t d_ff,
              ops::Activation activation = ops::Activation::kRelu, bool bias = true, bool gated = false);

  // x [B, L, D] → fc2(act(fc1(x))) [B, L, D]; with a residual r [B, L, D], r + that, added by fc2's
  // call (Linear::forward).
  Tensor forward(const Context& ctx, const Tensor& x, Saved* saved, const Tensor& residual = Tensor()) const;
  void backward(const Context& ctx, const Saved& saved, const Tensor& dy, const Tensor& dx) const;

  Linear fc1, fc2;
  ops::Activation activation = ops::Activation::kRelu;  // after fc1, fixed at construction
  bool gated = false;
};

}  // namespace tfm
