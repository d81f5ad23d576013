#pragma once
// `transformer train`: from parallel text to a model, as the paper trained it (§5).
#include <functional>
#include <string>

#include "layers/context.h"
#include "model/batch.h"
#include "model/transformer.h"
#include "ops/loss.h"
#include "train/options.h"

namespace tfm {

struct TrainResult {
  int64_t steps = 0;
  int64_t epochs = 0;
  double last_loss = 0;
  double best_score = 0;       // by options.best_metric, if validated
  std::string final_model;     // RUN/model.safetensors
  std::string stop_reason;
};

// Runs training to the end. `out` receives the log lines (a progress line on a terminal).
TrainResult train(const TrainOptions& options);

// One batch's label-smoothed loss (Σ over its target tokens); when `backward`, also its gradients,
// accumulated into the model's with dL/dlogits scaled by `dloss_scale` (1 / the step's tokens).
// What `train` runs for each batch; the training-step benchmark runs it too.
ops::LossSum batch_loss(const Transformer& model, const Context& ctx, const Batch& batch, double smoothing,
                        double dloss_scale, bool backward);

}  // namespace tfm
