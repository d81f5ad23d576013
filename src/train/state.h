#pragma once
// A training's checkpoints: the run folder's checkpoint-NNNNNNNN.safetensors files, each the model,
// Adam's moments ("optimizer.m", "optimizer.v") and, in the metadata, the vocabulary's fingerprint
// and the training state as one JSON record under "train_state" (docs/checkpoint-format.md):
//   {"step": 800, "epoch": 3, "position": 41, "rng_counter": 1600, "best": -2.31,
//    "bad_validations": 0, "tokens_seen": 3276800, "elapsed_s": 612.5, "interval_loss": 410.2,
//    "interval_tokens": 81920, "options": {...the TrainOptions as JSON...}}
// Checkpoints of earlier versions hold the same values as separate "train.*" keys; they still
// resume.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "data/vocab.h"
#include "model/transformer.h"
#include "train/options.h"

namespace tfm {

// All a checkpoint must restore for a resumed run to continue exactly as if never stopped.
struct TrainState {
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t position = 0;  // batches of this epoch already used
  uint64_t rng_counter = 0;
  bool has_best = false;
  double best = 0;       // the best validation score by best_metric (BLEU, or −loss)
  int64_t bad_validations = 0;
  int64_t tokens_seen = 0;
  double elapsed_s = 0;  // training time before this process
  double interval_loss = 0;      // the loss sum and target tokens since the last log line, so that a
  int64_t interval_tokens = 0;   //   resumed run logs exactly what an uninterrupted one does
};

// "best" is null when has_best is false.
void to_json(nlohmann::json& j, const TrainState& s);
// Every field is required; a missing, unknown or mistyped one is an error naming it.
void from_json(const nlohmann::json& j, TrainState& s);

inline constexpr const char* kTrainStateKey = "train_state";

// The metadata a checkpoint adds to the model's: the vocabulary's fingerprint and the state record
// (with the options under "options").
std::map<std::string, std::string> checkpoint_metadata(const TrainState& s, const TrainOptions& o,
                                                       const std::string& vocab_fingerprint);

// What a checkpoint's metadata records of its training.
struct CheckpointState {
  TrainState state;
  nlohmann::json options;  // the TrainOptions it was written with as JSON; null if not recorded
};
// Reads the "train_state" record, or the separate "train.*" keys of earlier versions; throws
// tfm::Error naming `path` and the key or field at fault.
CheckpointState read_checkpoint_state(const std::map<std::string, std::string>& meta, const std::string& path);

// RUN/checkpoint-NNNNNNNN.safetensors (the step zero-padded to 8 digits).
std::string checkpoint_path(const std::string& run_dir, int64_t step);
// The run folder's checkpoints, oldest first.
std::vector<std::string> checkpoints(const std::string& run_dir);
// The newest checkpoint in a run folder ("" if none).
std::string newest_checkpoint(const std::string& run_dir);

// What a run that stopped now would keep: "the last checkpoint, of step N, is kept" for the
// checkpoint of `last_saved`, or that none was saved yet (0).
std::string kept_checkpoint(int64_t last_saved);

// The step of a checkpoint-NNNNNNNN.safetensors path; -1 when the name is not one.
int64_t checkpoint_step(const std::string& path);

// Which of a run folder's checkpoints (oldest first) a save removes: all but the newest keep_last
// of the regular ones (steps that are multiples of save_every) and the newest of all. A checkpoint
// written off the schedule (by a stop request, a time limit, the end) is kept beside the regular
// ones until a newer one is written, so that an interrupted run does not lose a regular one.
std::vector<std::string> expired_checkpoints(const std::vector<std::string>& all, int64_t save_every,
                                             int64_t keep_last);

// Writes the checkpoint of step s.step (atomically), then removes those expired_checkpoints() names;
// returns its path.
std::string save_checkpoint(const Transformer& model, const TrainOptions& o, const TrainState& s, const Tensor& m,
                            const Tensor& v, const std::string& vocab_fingerprint);

// The options of this run that differ from those a checkpoint was written with ("bf16 false → true,
// seed 1 → 5"), `resume` itself aside; "" when none differ or the checkpoint does not record them.
std::string changed_options(const nlohmann::json& recorded, const TrainOptions& o);

// Loads a checkpoint into `model`, `m` and `v` after checking that its vocabulary and model
// configuration are this run's (else RunMismatch, which names the differing fields: the options
// are wrong, not the file). `changed` receives changed_options(); `verified` whether the file had a
// checksum to verify.
struct RunMismatch : Error {
  using Error::Error;
};
TrainState resume_from(const std::string& path, const TrainOptions& o, Transformer& model, const Tensor& m,
                       const Tensor& v, const Vocab& vocab, std::string* changed, bool* verified);

}  // namespace tfm
