#pragma once
// transformer::Trainer's private state and the steps of its training, declared for trainer.cc,
// which defines them (the run folder, the data, the ranks and the optimizer are in files beside it).
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device.h"
#include "core/rng.h"
#include "dist/communicator.h"
#include "io/file_lock.h"
#include "layers/context.h"
#include "model/transformer.h"
#include "train/corpus.h"
#include "train/gradient_sync.h"
#include "train/metrics.h"
#include "train/optimizer.h"
#include "train/pace.h"
#include "train/state.h"
#include "transformer/trainer.h"

namespace transformer {

struct Trainer::Impl {
  Impl(const TrainOptions& options, TrainCallbacks callbacks);

  // Rank 0 alone reports, logs and writes; the other ranks compute their share of each step.
  bool root() const { return comm.is_root(); }
  void message(const std::string& line) const {
    if (root() && callbacks.on_message) callbacks.on_message(line);
  }

  // The constructor's steps, in order. Settings are checked first, before minutes of reading data
  // and training a vocabulary: the model (with a stand-in vocabulary size), the device, the files,
  // the ranks' options and the run folder.
  void set_up_process();  // threads, options, device
  void check_run_settings();
  void build_model();
  void plan_steps();
  // Rank 0 resumes from the run folder's checkpoint (or starts its metrics anew) and records the
  // options; a resume sends its state to every rank.
  void restore_or_start();

  // Whether a limit or a stop request ends the training before another step, and why.
  std::optional<std::string> limit_reached() const;
  // limit_reached() as rank 0 sees it (its clock, its signals), the same on every rank.
  std::optional<std::string> shared_limit_reached() const;
  // This step's batches (indices into `batches`): the next `accumulate` × ranks of this epoch's
  // order (an epoch ends between steps); none when the epoch that just ended was the last.
  std::vector<int32_t> next_batches();
  // The step's target tokens over all ranks, as tfm::make_batch counts them (each sentence and its
  // end); adds the source and target tokens to the speed's count.
  int64_t count_tokens(const std::vector<int32_t>& step_batches);
  // Forward and backward over this rank's share of the batches (a run of `accumulate`), the
  // gradients summed over the ranks, then Adam; returns the step's loss sum over all ranks.
  double optimize(const std::vector<int32_t>& step_batches, int64_t tokens, double lr);
  // Batch `index`'s loss, its gradients added to the model's (scaled by 1 / the step's `tokens`).
  double train_batch(const tfm::Context& ctx, int32_t index, int64_t tokens) const;
  void report_progress(double lr);
  // A scheduled validation: best model, metrics, patience; true when patience ends the training.
  bool scheduled_validation();
  void log_metrics(const nlohmann::json& record, MetricsRecord::Kind kind);
  // Whether the gradients go through NCCL: on a GPU, started by an MPI launcher.
  bool over_nccl() const {
    return device != tfm::Device::CPU && (comm.size() > 1 || tfm::dist::started_by_launcher());
  }
  // Rank 0 writes a checkpoint of this step; "" on the other ranks.
  std::string checkpoint();
  void finish(const std::string& reason);
  StepResult step();
  // What follows a step's update: progress, validation, checkpoints, limits.
  void after_step(double lr);
  TrainResult current_result() const;

  tfm::dist::Communicator& comm = tfm::dist::world();  // first: it starts MPI under mpirun
  const TrainOptions o;
  TrainCallbacks callbacks;
  // message() as a function, for the steps in the files beside this one
  const std::function<void(const std::string&)> say = [this](const std::string& line) { message(line); };
  std::atomic<bool> stop_requested{false};
  // One call at a time (trainer.h): a second thread waits; a callback's call on the same thread nests.
  mutable std::recursive_mutex busy;
  tfm::Pace pace;  // from the start
  std::unique_ptr<tfm::FileLock> lock;
  tfm::TrainingCorpus data;
  ModelConfig config;
  std::unique_ptr<tfm::Transformer> model;
  tfm::Device device = tfm::Device::CPU;  // where the parameters, gradients and moments live
  tfm::Optimizer optimizer;
  std::optional<tfm::GradientSync> sync;
  std::vector<std::vector<int32_t>> batches;
  std::unique_ptr<tfm::MetricsLog> metrics;  // rank 0's
  tfm::TrainState s;
  tfm::Rng rng;
  std::vector<int32_t> order;  // this epoch's batch order
  TrainResult result;
  int64_t last_saved = 0;  // the step of the last checkpoint (0: none)
  int64_t last_validated = -1;  // the step of the last scheduled validation (-1: none in this process)
  bool done = false;
  std::string failure;  // the error that ended the training, if one did
};

}  // namespace transformer
