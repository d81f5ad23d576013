#pragma once
// A training's validation: the loss on the validation pairs (plain cross-entropy, so that
// perplexity = exp(loss)) and BLEU and exact match of the translations of their sources (a language
// model's: the loss and perplexity of its sentences), and what a scheduled one does to the run's
// best score and patience.
#include <cstdint>
#include <string>
#include <vector>

#include "data/batcher.h"
#include "data/vocab.h"
#include "model/transformer.h"
#include "train/objective.h"
#include "train/options.h"
#include "train/state.h"
#include "transformer/trainer.h"

namespace tfm {

using transformer::ValidationResult;

struct ValidData {
  std::vector<Example> examples;          // for the loss (a language model's sentences: tgt only)
  std::vector<std::vector<int32_t>> src;  // for translation
  std::vector<std::string> references;
};

// Batches of o.batch_tokens for the loss (`objective`'s batches; a masked LM's masks are those of
// kValidationRound, the same at every validation); the first o.valid_max_sentences sources (0: all)
// translated with beam o.valid_beam (translation only). Reads the model only (no dropout).
ValidationResult validate(const Transformer& model, const Vocab& vocab, const ValidData& data, const TrainOptions& o,
                          const Objective& objective);

// A scheduled validation's result in the run's state: a better score by o.best_metric (BLEU, or
// −loss; a language model's always −loss) than the best so far becomes the best and resets the count of bad validations, another
// adds one to it. Returns whether it was better.
bool record_validation(const ValidationResult& r, const TrainOptions& o, TrainState& s);

// "validation at step 1000: loss 2.3100 | ppl 10.07 | BLEU 21.40 | exact 12.0%", " (best)" added when
// `best`; a language model's (`translation` false) without BLEU and exact match.
std::string validation_line(int64_t step, const ValidationResult& r, bool best, bool translation = true);

}  // namespace tfm
