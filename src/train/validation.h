#pragma once
// A training's validation: the loss on the validation pairs (plain cross-entropy, so that
// perplexity = exp(loss)) and BLEU and exact match of the translations of their sources.
#include <cstdint>
#include <string>
#include <vector>

#include "data/batcher.h"
#include "data/vocab.h"
#include "model/transformer.h"
#include "train/options.h"
#include "transformer/trainer.h"

namespace tfm {

using transformer::ValidationResult;

struct ValidData {
  std::vector<Example> examples;          // for the loss
  std::vector<std::vector<int32_t>> src;  // for translation
  std::vector<std::string> references;
};

// Batches of o.batch_tokens for the loss; the first o.valid_max_sentences sources (0: all)
// translated with beam o.valid_beam. Reads the model only (no dropout, no random numbers).
ValidationResult validate(const Transformer& model, const Vocab& vocab, const ValidData& data, const TrainOptions& o);

}  // namespace tfm
