// The training's clock: its time, speed and ETA for the progress reports.
#include "train/pace.h"

#include <algorithm>

namespace tfm {

void Pace::begin_steps(int64_t first_step, double elapsed_before) {
  first_step_ = first_step;
  elapsed_before_ = elapsed_before;
  interval_start_ = steps_start_ = Clock::now();
}

transformer::Progress Pace::progress(const TrainState& s, const TrainOptions& o, double lr) const {
  transformer::Progress p;
  p.step = s.step;
  p.epoch = s.epoch;
  const double secs = std::chrono::duration<double>(Clock::now() - interval_start_).count();
  p.tokens_per_s = secs > 0 ? static_cast<double>(interval_tokens_) / secs : 0;
  p.log_step = s.step % o.log_every == 0;
  if (o.max_steps > 0)  // from this process's own pace
    p.eta_s = std::chrono::duration<double>(Clock::now() - steps_start_).count() /
              static_cast<double>(s.step - first_step_) * static_cast<double>(o.max_steps - s.step);
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
