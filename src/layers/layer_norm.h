#pragma once
// The model's normalization over the last dim D, of a configured kind: layer normalization with a
// learned gain and bias, or RMSNorm with a gain only (ModelConfig::norm).
#include <string>

#include "layers/context.h"

namespace tfm {

enum class NormKind { kLayerNorm, kRmsNorm };

// "layernorm" → kLayerNorm, "rmsnorm" → kRmsNorm; another name throws, naming it.
NormKind parse_norm_kind(const std::string& name);

class LayerNorm {
 public:
  struct Saved {
    Tensor x, mean, rstd;  // x: [N, D]; mean (layer norm only), rstd: [N]
  };

  LayerNorm() = default;
  // Registers `<name>.weight` (gain, initially 1) [D] and, for kLayerNorm, `<name>.bias` [D].
  LayerNorm(ParamStore& params, const std::string& name, int64_t d, double eps, NormKind kind = NormKind::kLayerNorm);

  // x [N, D] (N: any leading dims) → [N, D].
  Tensor forward(const Context& ctx, const Tensor& x, Saved* saved) const;
  // dgain (and dbias) accumulate; dx += the input gradient.
  void backward(const Context& ctx, const Saved& saved, const Tensor& dy, const Tensor& dx) const;

  int gain = -1, bias = -1;  // bias −1: none (RMSNorm)
  int64_t d = 0;
  double eps = 1e-5;
  NormKind kind = NormKind::kLayerNorm;
};

}  // namespace tfm
