#pragma once
// What a training learns from its examples: translation (source → target pairs), a causal language
// model's next tokens (decoder-only), or a masked language model's masked tokens (encoder-only,
// BERT). Each turns a run of examples into a batch and counts the tokens its loss averages over.
#include <cstdint>
#include <vector>

#include "data/batcher.h"
#include "data/masking.h"
#include "model/batch.h"
#include "model/config.h"

namespace tfm {

struct Objective {
  enum class Kind { kTranslation, kCausal, kMasked };
  Kind kind = Kind::kTranslation;
  MaskingOptions masking;  // kMasked only
};

// The masking round of the validation set: the same masks at every validation, unlike any epoch's.
inline constexpr int64_t kValidationRound = 0x7fffffff;

// The objective of a model of config `c` (its architecture); a masked LM masks `mask_fraction` of
// each sentence's tokens with `mask_id`, drawing from `seed`.
Objective make_objective(const ModelConfig& c, double mask_fraction, int32_t mask_id, uint64_t seed);

// The batch of `examples` at `indices`: translation pairs (make_batch), a language model's sentences
// (Example::tgt; make_lm_batch), or those sentences masked, example i of masking round `round` with
// masking_stream(round, i): src the masked tokens and EOS, tgt_out the chosen tokens (pad_id
// elsewhere, which the loss skips), target_tokens their count.
Batch objective_batch(const Objective& objective, const std::vector<Example>& examples,
                      const std::vector<int32_t>& indices, const ModelConfig& c, int64_t round);

// The tokens of `e` the loss counts: each target token and its EOS, or the masked positions.
int64_t loss_tokens(const Objective& objective, const Example& e);

}  // namespace tfm
