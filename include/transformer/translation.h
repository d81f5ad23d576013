#pragma once
// What translating and scoring return (docs/api.md): hypotheses with their scores and attention,
// a sentence's translation, a pair's score. Value types only.
#include <cstdint>
#include <string>
#include <vector>

#include "transformer/text.h"

namespace transformer {

// The encoder-decoder attention of one hypothesis: for each decoder layer and head, each output
// token's (end of sentence included) weights over the source tokens (end of sentence included).
struct Attention {
  int64_t layers = 0, heads = 0, target_length = 0, source_length = 0;
  std::vector<float> weights;  // [layers][heads][target_length][source_length], row-major
  float at(int64_t layer, int64_t head, int64_t target, int64_t source) const {
    return weights[static_cast<size_t>(((layer * heads + head) * target_length + target) * source_length + source)];
  }
  bool empty() const { return weights.empty(); }
};

struct Hypothesis {
  std::string text;          // detokenized ("" for translate_ids)
  std::vector<int32_t> ids;  // the output tokens, without beginning and end of sentence
  double score = 0;          // Σ log p of the tokens and the end of sentence
  double normalized = 0;     // score / lp(|ids| + 1): what beam search ranks by
  Attention attention;       // when SearchOptions::record_attention
};

struct Translation {
  std::vector<Hypothesis> hypotheses;  // n-best, best first; empty for an empty input
  std::vector<int32_t> source_ids;     // the encoded (and maybe truncated) source, without end of sentence
  std::vector<int32_t> target_prefix_ids;  // the forced target prefix, encoded: every hypothesis's ids
                                           //   begin with it (empty: none)
  bool truncated = false;              // the source had more than max_input_tokens tokens (text: or
                                       //   over 1024 bytes each, mostly spaces, cut before tokenizing)
  Repairs repairs;                     // what clean_input changed in the input line (text input only)
  Repairs prefix_repairs;              // what clean_input changed in the target prefix (text input only)
  // The best hypothesis; throws Error for an empty input, which has none.
  const Hypothesis& best() const;
};

// log p(target | source) under the model, by teacher forcing without label smoothing (Marian's
// scorer and fairseq's reference scoring): for rescoring n-best lists and filtering corpora.
struct Score {
  double total = 0;        // Σ log p of the target's tokens and its end of sentence
  double per_token = 0;    // total / tokens
  int64_t tokens = 0;      // the target's tokens, end of sentence included
  bool truncated = false;  // a side had more than max_input_tokens tokens (text: or over 1024 bytes each)
  Repairs source_repairs, target_repairs;  // what clean_input changed (text input only)
};

}  // namespace transformer
