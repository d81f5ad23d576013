#pragma once
// Every option of `transformer train`, in one documented struct. A JSON config file holds any of
// them (docs/training.md), command-line flags override the file, and the resolved options are
// saved in the run folder as config.json.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "data/vocab.h"
#include "model/config.h"

namespace tfm {

struct TrainOptions {
  // Data: parallel text files, one sentence per line.
  std::string train_source, train_target;  // required
  std::string valid_source, valid_target;  // optional: no validation without them
  std::string run_dir = "runs/train";      // checkpoints, vocabulary, metrics, plots
  std::string vocab;                       // a SentencePiece .model to use; empty: train one
  VocabOptions vocab_options;              // used when training the vocabulary
  int64_t max_tokens = 256;                // pairs with more subword tokens on a side are skipped
  int64_t max_chars = 4096;                // pairs with more characters on a side are skipped (0: no limit)

  // The model: a preset and ModelConfig field overrides (model/config.h); vocab_size comes from
  // the vocabulary.
  std::string preset = "base";
  nlohmann::json model_overrides = nlohmann::json::object();
  ModelConfig resolved_model(int64_t vocab_size) const;

  // Batches by tokens (§5.1): about batch_tokens source and batch_tokens target tokens each,
  // padding included, sentences of similar length together; `accumulate` batches per step.
  int64_t batch_tokens = 4096;
  int64_t accumulate = 1;

  // Optimization (§5.3): Adam, lr = lr_factor · d_model^−½ · min(step^−½, step · warmup^−1.5).
  double lr_factor = 1.0;
  int64_t warmup_steps = 4000;
  double adam_beta1 = 0.9, adam_beta2 = 0.98, adam_eps = 1e-9;
  double label_smoothing = 0.1;  // ε_ls (§5.4)
  double clip_norm = 0.0;        // clip the gradient's global L2 norm to this; 0: no clipping
  // Mixed precision: the weight products (linear layers and the output projection, forward and
  // backward) take bfloat16 inputs and sum in float32; weights, gradients, Adam's moments and
  // everything else stay float32. Fast where the CPU has AVX-512 BF16 or AMX, emulated with the
  // same definition (slower than float32) elsewhere (ops::bf16_path()). Validation and translation
  // stay float32.
  bool bf16 = false;

  // When to stop: whichever comes first (0: no limit).
  int64_t max_steps = 100000;
  int64_t max_epochs = 0;
  double max_seconds = 0;

  // Validation every valid_every steps: loss, perplexity and BLEU of the translations.
  int64_t valid_every = 1000;
  std::string best_metric = "bleu";  // "bleu" (higher is better) or "loss" (lower is better)
  int64_t patience = 0;              // stop after this many validations without improvement; 0: never
  int64_t valid_beam = 1;            // beam for the validation translations (1: greedy, fastest)
  int64_t valid_max_sentences = 0;   // translate at most this many validation sentences; 0: all

  // Checkpoints every save_every steps and at the end; the last keep_last are kept.
  int64_t save_every = 1000;
  int64_t keep_last = 5;
  bool resume = false;  // continue from the newest checkpoint in run_dir

  int64_t log_every = 100;  // a log line (and a metrics record) every this many steps
  uint64_t seed = 1;        // parameters, dropout, batch order, vocabulary sampling
  int64_t threads = 0;      // 0: all cores

  // Throws tfm::Error naming the first option out of range.
  void validate() const;
};

void to_json(nlohmann::json& j, const TrainOptions& o);
// Reads the fields present over `o`'s values; "model" is an object of ModelConfig fields applied
// over the preset. Unknown fields are an error naming them.
void from_json(const nlohmann::json& j, TrainOptions& o);

// One line describing a field of TrainOptions (its JSON name), for `train --help`; "" if unknown.
const char* train_option_help(std::string_view field);

// lr at `step` (counted from 1) by the paper's schedule.
double learning_rate(const TrainOptions& o, int64_t d_model, int64_t step);

}  // namespace tfm
