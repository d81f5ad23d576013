#pragma once
// Training as a library: transformer::Trainer trains a translation model from parallel text, as
// `transformer train` does (docs/training.md), for a program that embeds it. The library writes
// nothing to the terminal and installs no signal handlers: what happens reaches the program through
// callbacks, and a stop is a request (request_stop(), callable from a signal handler).
//
//   transformer::TrainOptions options;
//   options.train_source = "train.en";
//   options.train_target = "train.de";
//   options.run_dir = "runs/en-de";
//   options.preset = "small";
//   options.model.dropout = 0.3;
//   transformer::TrainCallbacks callbacks;
//   callbacks.on_message = [](const std::string& line) { std::cerr << line << '\n'; };
//   transformer::Trainer trainer(options, callbacks);
//   const transformer::TrainResult result = trainer.run();
//
// Errors (a missing file, an option out of range, a run folder in use, a loss that is not finite)
// throw transformer::Error with a message that names the problem and the value.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "transformer/error.h"
#include "transformer/model_config.h"
#include "transformer/train_options.h"

namespace transformer {

// What one optimizer step did, as the command line's progress line shows it.
struct Progress {
  int64_t step = 0;          // steps done, this one included (counted from 1)
  int64_t epoch = 0;         // complete passes over the training data before this step's batches
  double loss = 0;           // mean label-smoothed loss per target token since the last log step
  double learning_rate = 0;  // this step's
  double tokens_per_s = 0;   // source and target tokens per second since the last log step
  double elapsed_s = 0;      // the run's training time, earlier processes of a resumed run included
  double eta_s = -1;         // seconds until the first limit ends the training: max_steps or max_epochs at
                             // this process's pace, or max_seconds; -1 when none can be estimated
  bool log_step = false;     // a log step (every log_every steps): a training record follows
};

// One record of RUN/metrics.jsonl, as written there.
struct MetricsRecord {
  enum class Kind { kTraining, kValidation };
  Kind kind = Kind::kTraining;
  int64_t step = 0;
  // The record's other fields under their metrics.jsonl names. Training: epoch, loss (the mean per
  // target token since the previous record), lr, tokens_per_s, elapsed_s. Validation: valid_loss,
  // valid_ppl, valid_bleu, valid_exact.
  std::map<std::string, double> values;
};

// A validation: the loss on the validation pairs and the quality of their greedy (valid_beam)
// translations of the first valid_max_sentences sources.
struct ValidationResult {
  double loss = 0;   // cross-entropy per target token, without label smoothing
  double ppl = 0;    // exp(loss)
  double bleu = 0;   // corpus BLEU against the validation targets
  double exact = 0;  // fraction of translations equal to their reference
};

// What one Trainer::step() call did.
struct StepResult {
  int64_t step = 0;          // steps done after this call
  int64_t epoch = 0;
  bool stepped = false;      // an optimizer step was taken (false when training had already ended)
  double loss = 0;           // this step's mean label-smoothed loss per target token
  int64_t tokens = 0;        // target tokens in this step's batches
  double learning_rate = 0;  // this step's
  bool finished = false;     // training has ended: result() says why; further steps do nothing
};

struct TrainResult {
  int64_t steps = 0;
  int64_t epochs = 0;
  double last_loss = 0;        // the last step's mean loss per target token
  double best_score = 0;       // by options.best_metric (BLEU, or −loss), if validated
  std::string final_model;     // RUN/model.safetensors, once finished
  std::string stop_reason;     // "reached max_steps 1000", "interrupted", ...; "" while training
  bool interrupted = false;    // stopped by request_stop()
};

// Each may be left empty. They run on the thread that calls the Trainer; an exception from one
// propagates out of that call.
struct TrainCallbacks {
  // Log lines: the data read, the vocabulary written, "resumed from ...", warnings, validations,
  // the final "stopped at step ..." line.
  std::function<void(const std::string& line)> on_message;
  // After each optimizer step.
  std::function<void(const Progress& progress)> on_progress;
  // After each record appended to RUN/metrics.jsonl.
  std::function<void(const MetricsRecord& record)> on_metrics;
};

// Draws a run's training and validation loss and BLEU curves from RUN/metrics.jsonl as SVG, written
// atomically to `output` ("": RUN/training.svg); returns the path written. Throws when the run has
// no metrics or no records yet.
std::string plot_training(const std::string& run_dir, const std::string& output = "");

// Threads: one Trainer takes one call at a time. step(), validate(), save_checkpoint(), finished(),
// result() and set_callbacks() hold the Trainer's lock while they run; a call from a second thread
// waits until the call under way returns, so that steps taken from several threads are the same
// steps, in turn, as one thread would take (run() takes the lock step by step: another thread's
// call may come between two of its steps). A callback calling the Trainer on the thread that runs
// it does not wait (the lock is that thread's already). request_stop(), options() and
// model_config() take no lock. Waiting, not an error: a second caller (a thread pool stepping, a
// monitor reading result()) has a well-defined answer once the first call is done.
class Trainer {
 public:
  // Validates the options, takes the run folder's lock (held until the Trainer is destroyed),
  // reads the data, trains or loads the vocabulary, builds the model and, with options.resume,
  // restores the newest readable checkpoint. Throws transformer::Error naming what is wrong.
  explicit Trainer(const TrainOptions& options, TrainCallbacks callbacks = {});
  ~Trainer();
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Steps until a limit (max_steps, max_epochs, max_seconds, patience) or a stop request ends the
  // training, then finishes as step() does; returns result().
  TrainResult run();

  // One optimizer step, with what the schedule adds to it: a log record every log_every steps, a
  // validation every valid_every, a checkpoint every save_every. When a limit is reached or a stop
  // was requested, before or after the step, it finishes the training: a checkpoint of the last
  // step, RUN/model.safetensors, RUN/training.svg, and finished = true.
  StepResult step();

  // A validation of the current model, now (the options must name validation files). It only
  // measures: model-best, patience and metrics.jsonl are the scheduled validations' business.
  ValidationResult validate();

  // Writes a checkpoint of the current step now (keeping the newest keep_last of those every
  // save_every steps, and the newest of all); returns its path.
  std::string save_checkpoint();

  // Asks the training to stop: the step under way completes, a checkpoint is saved, and the
  // training finishes with stop_reason "interrupted". Safe from any thread and from a signal
  // handler (it sets an atomic flag and nothing else).
  void request_stop() noexcept;

  bool finished() const;
  // The result so far (steps, epochs, last loss, best score), complete once finished.
  TrainResult result() const;
  const TrainOptions& options() const;
  // The model trained: the preset, the overrides and the vocabulary's size.
  const ModelConfig& model_config() const;

  void set_callbacks(TrainCallbacks callbacks);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace transformer
