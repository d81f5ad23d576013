#pragma once
// Adam (ops/adam.h) over a model's flat parameters, with gradient clipping by norm, and the check
// that stops a run before a non-finite loss or gradient reaches the weights.
#include <cstdint>

#include "core/param_store.h"
#include "core/tensor.h"
#include "train/options.h"

namespace tfm {

struct Optimizer {
  Tensor m, v;  // Adam's moments, where the parameters are: what a checkpoint saves beside the model

  Optimizer() = default;
  // Zero moments of the shape, type and device of `values`.
  explicit Optimizer(const Tensor& values);

  // Step `step` (counted from 1) with learning rate `lr` over the gradients in `params`, clipped to
  // o.clip_norm. Throws when `mean_loss` (the step's, per target token) or the gradients' norm is
  // not finite, before any weight changes, saying what the run keeps (the checkpoint of
  // `last_saved`, 0 for none).
  void update(ParamStore& params, const TrainOptions& o, double mean_loss, double lr, int64_t step,
              int64_t last_saved) const;
};

}  // namespace tfm
