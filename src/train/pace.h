#pragma once
// A training's pace: its training time (a resumed run's earlier processes included), the speed in
// tokens per second since the last log line, and the time left to max_steps.
#include <chrono>
#include <cstdint>

#include "train/options.h"
#include "train/state.h"
#include "transformer/trainer.h"

namespace tfm {

class Pace {
 public:
  using Clock = std::chrono::steady_clock;

  // The run's time counts from now (the Trainer's start).
  Pace() : start_(Clock::now()) {}
  // The steps start now, after start-up: the ETA's pace counts from step `first_step` on, and the
  // run's time adds `elapsed_before`, that of its earlier processes.
  void begin_steps(int64_t first_step, double elapsed_before);
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
  Clock::time_point interval_start_;
  Clock::time_point steps_start_;  // when this process's first step began: the ETA's pace, without start-up
};

}  // namespace tfm
