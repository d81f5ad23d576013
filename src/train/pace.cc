// The training's clock: its time, speed and ETA for the progress reports.
#include "train/pace.h"

#include <algorithm>

namespace tfm {

namespace {

// Steps left until the end of epoch max_epochs: the rest of this epoch's batches, then whole epochs.
int64_t steps_to_max_epochs(const TrainOptions& o, const TrainState& s, const EpochShape& shape) {
  const int64_t per_step = std::max<int64_t>(1, shape.per_step);
  auto steps_for = [&](int64_t batches) { return (std::max<int64_t>(0, batches) + per_step - 1) / per_step; };
  if (s.epoch >= o.max_epochs) return 0;
  return steps_for(shape.batches - s.position) + (o.max_epochs - s.epoch - 1) * steps_for(shape.batches);
}

}  // namespace

double eta_seconds(const TrainOptions& o, const TrainState& s, const EpochShape& shape, double seconds_per_step,
                   double elapsed) {
  double eta = -1;
  auto earliest = [&](double candidate) { eta = eta < 0 ? candidate : std::min(eta, candidate); };
  if (seconds_per_step > 0 && o.max_steps > 0)
    earliest(seconds_per_step * static_cast<double>(std::max<int64_t>(0, o.max_steps - s.step)));
  if (seconds_per_step > 0 && o.max_epochs > 0 && shape.batches > 0)
    earliest(seconds_per_step * static_cast<double>(steps_to_max_epochs(o, s, shape)));
  if (o.max_seconds > 0) earliest(std::max(0.0, o.max_seconds - elapsed));
  return eta;
}

void Pace::begin_steps(int64_t first_step, double elapsed_before, const EpochShape& shape) {
  first_step_ = first_step;
  elapsed_before_ = elapsed_before;
  shape_ = shape;
  interval_start_ = steps_start_ = Clock::now();
}

transformer::Progress Pace::progress(const TrainState& s, const TrainOptions& o, double lr) const {
  transformer::Progress p;
  p.step = s.step;
  p.epoch = s.epoch;
  const double secs = std::chrono::duration<double>(Clock::now() - interval_start_).count();
  p.tokens_per_s = secs > 0 ? static_cast<double>(interval_tokens_) / secs : 0;
  p.log_step = s.step % o.log_every == 0;
  const int64_t steps_here = s.step - first_step_;  // this process's own pace
  const double seconds_per_step =
      steps_here > 0 ? std::chrono::duration<double>(Clock::now() - steps_start_).count() / static_cast<double>(steps_here)
                     : 0;
  p.eta_s = eta_seconds(o, s, shape_, seconds_per_step, elapsed());
  p.loss = s.interval_loss / static_cast<double>(std::max<int64_t>(1, s.interval_tokens));
  p.learning_rate = lr;
  p.elapsed_s = elapsed();
  return p;
}

void Pace::new_interval() {
  interval_tokens_ = 0;
  interval_start_ = Clock::now();
}

}  // namespace tfm
