#pragma once
// The run folder (run_dir), rank 0's alone (the other ranks may run on machines that do not see
// it): its checks and lock at the start, its config.json, and the checkpoint a resume restores.
#include <functional>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "data/vocab.h"
#include "io/file_lock.h"
#include "model/config.h"
#include "model/transformer.h"
#include "train/metrics.h"
#include "train/options.h"
#include "train/state.h"

namespace tfm {

// Checks that the folder fits the run (a resume's holds a checkpoint, a new run's none), creates it,
// locks it for the whole run, and removes the temporaries of saves that were interrupted, saying so
// through `message`. The lock is released when the returned FileLock is destroyed.
std::unique_ptr<FileLock> open_run_folder(const TrainOptions& o,
                                          const std::function<void(const std::string&)>& message);

// RUN/config.json: the options, with the model they resolve to under "resolved_model" and, for a
// masked LM (mask_id >= 0), its vocabulary's "<mask>" id under "mask_id" (both derived, for readers).
void write_run_config(const TrainOptions& o, const ModelConfig& config, int32_t mask_id = -1);

// Loads the newest checkpoint that loads into `model`, `m` and `v` (one cut short or damaged is
// passed over, saying so, for the one before it), drops the lines of `metrics` after its step, and
// returns its state. Throws when the options do not fit the checkpoints, or none can be read.
TrainState resume_newest(const TrainOptions& o, Transformer& model, const Tensor& m, const Tensor& v,
                         const Vocab& vocab, const MetricsLog& metrics,
                         const std::function<void(const std::string&)>& message);

}  // namespace tfm
