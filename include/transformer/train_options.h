#pragma once
// Every option of a training (`transformer train`, transformer::Trainer), in one documented struct.
// A JSON config file holds any of them (docs/training.md): each field under its own name, except
// vocab_options (as "vocab_size" and "vocab_type") and model (as the object "model"). Command-line
// flags override the file, and the resolved options are saved in the run folder as config.json.
#include <cstdint>
#include <string>

#include "transformer/model_config.h"
#include "transformer/vocab_options.h"

namespace transformer {

struct TrainOptions {
  // Data: parallel text files, one sentence per line (an encoder-decoder model: translation).
  std::string train_source, train_target;  // required for an encoder-decoder model
  std::string valid_source, valid_target;  // optional: no validation without them
  // A language model's data (model.architecture decoder-only or encoder-only): monolingual text,
  // one sentence per line, in place of the parallel files. decoder-only learns to predict each next
  // token (a causal LM, GPT); encoder-only the masked tokens (BERT's masked-LM objective).
  std::string train_text;  // required for a language model
  std::string valid_text;  // optional: no validation without it
  // encoder-only: the fraction of each sentence's tokens (specials aside) the masked-LM loss
  // predicts; of those, 80% are replaced by "<mask>", 10% by a random token, 10% kept.
  double mask_fraction = 0.15;
  std::string run_dir = "runs/train";      // checkpoints, vocabulary, metrics, plots
  std::string vocab;                       // a SentencePiece .model to use; empty: train one
  VocabOptions vocab_options;              // used when training the vocabulary (its seed is `seed`)
  int64_t max_tokens = 256;                // pairs with more subword tokens on a side are skipped
  int64_t max_chars = 4096;                // pairs with more characters on a side are skipped (0: no limit)

  // The model: a preset and the fields that override it; vocab_size comes from the vocabulary.
  // Learned positions (model.positions "learned") without max_positions get a table that holds
  // position_offset + max_tokens + 1 positions (the longest sentence kept, with its BOS or EOS).
  std::string preset = "base";
  ModelOverrides model;
  // The preset with the overrides applied and the vocabulary's size; throws transformer::Error
  // naming an unknown preset or a field out of range.
  ModelConfig resolved_model(int64_t vocab_size) const;

  // Batches by tokens (§5.1): about batch_tokens source and batch_tokens target tokens each,
  // padding included, sentences of similar length together; `accumulate` batches per step.
  int64_t batch_tokens = 4096;
  int64_t accumulate = 1;
  // Data-parallel training (mpirun): the gradients are summed over the processes in buckets of
  // about this many MB while the backward pass still runs; 0: in one piece after it.
  double allreduce_bucket_mb = 25;
  // Data-parallel training (mpirun): from the first step on, a rank that waits longer than this
  // many seconds for the others in a collective ends every rank, naming the ranks that do not
  // answer (a rank stopped, hung or unreachable); 0: wait forever. Rank 0's validations are not
  // counted (the others wait for them without a limit).
  double rank_timeout = 600;

  // Optimization (§5.3): Adam, lr = lr_factor · d_model^−½ · min(step^−½, step · warmup^−1.5).
  double lr_factor = 1.0;
  int64_t warmup_steps = 4000;
  double adam_beta1 = 0.9, adam_beta2 = 0.98, adam_eps = 1e-9;
  double label_smoothing = 0.1;  // ε_ls (§5.4)
  double clip_norm = 0.0;        // clip the gradient's global L2 norm to this; 0: no clipping
  // Mixed precision: the weight products (linear layers and the output projection, forward and
  // backward) take bfloat16 inputs and sum in float32. The activations they read are kept as
  // bfloat16 tensors, each rounded once where it is made, and the weights are read from one
  // bfloat16 copy made per step; the float32 weights, gradients, Adam's moments, the residual
  // stream, attention, layer norm and the loss stay float32. Fast where the CPU has AVX-512 BF16
  // or AMX, emulated with the same definition (slower than float32) elsewhere. Validation and
  // translation stay float32.
  bool bf16 = false;
  // Where the model trains: "cpu", or "cuda" ("cuda:0"), the first NVIDIA GPU, in a build with the
  // CUDA backend. The files it writes are the same either way.
  std::string device = "cpu";

  // When to stop: whichever comes first (0: no limit).
  int64_t max_steps = 100000;
  int64_t max_epochs = 0;
  double max_seconds = 0;

  // Validation every valid_every steps: loss, perplexity and BLEU of the translations (a language
  // model's: loss and perplexity, and model-best is chosen by the loss whatever best_metric says).
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

  // Throws transformer::Error naming the first option out of range.
  void validate() const;
};

// The options as the JSON of a `train --config` file and RUN/config.json (docs/training.md): read
// over the defaults (fields absent keep them; "model" holds ModelConfig overrides), and written.
// Unknown fields and values of the wrong type are errors naming them.
TrainOptions train_options_from_json(const std::string& json);
std::string train_options_to_json(const TrainOptions& options);

}  // namespace transformer
