#pragma once
// Layer normalization with a learned gain and bias, over the last dim D.
#include <string>

#include "layers/context.h"

namespace tfm {

class LayerNorm {
 public:
  struct Saved {
    Tensor x, mean, rstd;  // x: [N, D]; mean, rstd: [N]
  };

  LayerNorm() = default;
  // Registers `<name>.weight` (gain, initially 1) and `<name>.bias` [D].
  LayerNorm(ParamStore& params, const std::string& name, int64_t d, double eps);

  // x [N, D] (N: any leading dims) → [N, D].
  Tensor forward(const Context& ctx, const Tensor& x, Saved* saved) const;
  // dgain, dbias accumulate; dx += the input gradient.
  void backward(const Context& ctx, const Saved& saved, const Tensor& dy, const Tensor& dx) const;

  int gain = -1, bias = -1;
  int64_t d = 0;
  double eps = 1e-5;
};

}  // namespace tfm
