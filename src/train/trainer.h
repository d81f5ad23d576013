#pragma once
// `transformer train`: from parallel text to a model, as the paper trained it (§5).
#include <functional>
#include <string>

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

// The newest checkpoint in a run folder ("" if none).
std::string newest_checkpoint(const std::string& run_dir);

}  // namespace tfm
