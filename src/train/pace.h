#pragma once
// A training's pace: its training time (a resumed run's earlier processes included), the speed in
// tokens per second since the last log line, and the time left to the first limit that ends it.
#include <chrono>
#include <cstdint>

#include "train/options.h"
#include "train/state.h"
#include "transformer/trainer.h"

namespace tfm {

// How the batches fall into steps: an epoch's batches, and the batches of one step (accumulate ×
// ranks; a step takes none from the next epoch).
struct EpochShape {
  int64_t batches = 0;
  int64_t per_step = 1;
};

// Seconds until the first of the limits that apply ends the training: max_steps and max_epochs at
// `seconds_per_step` (unknown when <= 0), max_seconds from the run's training time `elapsed`.
// -1 when none applies or can be estimated (patience and stop requests cannot be foreseen).
double eta_seconds(const TrainOptions& o, const TrainState& s, const EpochShape& shape, double seconds_per_step,
                   double elapsed);

class Pace {
 public:
  using Clock = std::chrono::steady_clock;

  // The run's time counts from now (the Trainer's start).
  Pace() : start_(Clock::now()) {}
  // The steps start now, after start-up: the ETA's pace counts from step `first_step` on, and the
  // run's time adds `elapsed_before`, that of its earlier processes.
  void begin_steps(int64_t first_step, double elapsed_before, const EpochShape& shape);
  // Tokens (source and target) trained on, for the speed.
  void count(int64_t tokens) { interval_tokens_ += tokens; }
  // The progress after step s.step with learning rate `lr`.
  transformer::Progress progress(const TrainState& s, const TrainOptions& o, double lr) const;
  // After a log line: the speed counts anew.
  void new_interval();
  double elapsed() const {
    return elapsed_before_ + std::chrono::duration<double>(Clock::now() - start_).count();
  }

 private:
  const Clock::time_point start_;
  // The tokens this process trained on since the last log line or its start: the speed's
  // numerator. TrainState::interval_tokens, the loss's denominator, is a checkpoint's too (a resumed
  // run logs the loss an uninterrupted one does), so it counts steps from before a resume.
  int64_t interval_tokens_ = 0;
  int64_t first_step_ = 0;
  double elapsed_before_ = 0;
  EpochShape shape_;
  Clock::time_point interval_start_;
  Clock::time_point steps_start_;  // when this process's first step began: the ETA's pace, without start-up
};

}  // namespace tfm
