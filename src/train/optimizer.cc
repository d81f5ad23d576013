// Adam with gradient clipping, and the stop on a non-finite loss or gradient.
#include "train/optimizer.h"

#include <cmath>

#include "core/error.h"
#include "ops/adam.h"
#include "ops/elementwise.h"
#include "train/state.h"

namespace tfm {

Optimizer::Optimizer(const Tensor& values)
    : m(Tensor::zeros(values.shape(), values.dtype(), values.device())),
      v(Tensor::zeros(values.shape(), values.dtype(), values.device())) {}

void Optimizer::update(ParamStore& params, const TrainOptions& o, double mean_loss, double lr, int64_t step,
                       int64_t last_saved) const {
  // A non-finite loss or gradient stops the run before Adam spreads it into the weights, so that
  // nothing saved (checkpoints, model-best) ever holds it.
  const double norm = std::sqrt(ops::sum_squares(params.grads()));
  if (!std::isfinite(mean_loss) || !std::isfinite(norm))
    throw Error(cat("the training ", std::isfinite(mean_loss) ? "gradient norm" : "loss", " became ",
                    std::isfinite(mean_loss) ? norm : mean_loss, " at step ", step, "; stopped before updating the weights; ",
                    kept_checkpoint(last_saved), " (try a lower lr_factor, or clip_norm)"));
  if (o.clip_norm > 0 && norm > o.clip_norm) ops::scale(params.grads(), o.clip_norm / norm, params.grads());
  ops::adam_step(params.values(), params.grads(), m, v, {lr, o.adam_beta1, o.adam_beta2, o.adam_eps, step});
}

}  // namespace tfm
