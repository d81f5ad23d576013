#pragma once
// One training batch: the batch of some examples, and its label-smoothed loss and gradients, what
// each training step runs for each of its batches (the training-step benchmark runs it too).
#include <cstdint>
#include <vector>

#include "data/batcher.h"
#include "layers/context.h"
#include "model/batch.h"
#include "model/transformer.h"
#include "ops/loss.h"

namespace tfm {

// One batch's label-smoothed loss (Σ over its target tokens); when `backward`, also its gradients,
// accumulated into the model's with dL/dlogits scaled by `dloss_scale` (1 / the step's tokens).
ops::LossSum batch_loss(const Transformer& model, const Context& ctx, const Batch& batch, double smoothing,
                        double dloss_scale, bool backward);

// The batch of `examples` at `indices`.
Batch to_batch(const std::vector<Example>& examples, const std::vector<int32_t>& indices, const ModelConfig& c);

}  // namespace tfm
