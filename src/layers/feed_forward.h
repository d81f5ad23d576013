#pragma once
// Position-wise feed-forward network (§3.3): FFN(x) = max(0, x·W1ᵀ + b1)·W2ᵀ + b2.
#include <string>

#include "layers/linear.h"

namespace tfm {

class FeedForward {
 public:
  struct Saved {
    Tensor x;       // input: [B, L, D]
    Tensor hidden;  // after ReLU: [B, L, F]
  };

  FeedForward() = default;
  // Registers `<name>.fc1` (D → F) and `<name>.fc2` (F → D).
  FeedForward(ParamStore& params, const std::string& name, int64_t d_model, int64_t d_ff);

  Tensor forward(const Context& ctx, const Tensor& x, Saved* saved) const;
  void backward(const Context& ctx, const Saved& saved, const Tensor& dy, const Tensor& dx) const;

  Linear fc1, fc2;
};

}  // namespace tfm
