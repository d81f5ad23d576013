#pragma once
// Translating text: encode each line with the vocabulary, decode batches of sentences of similar
// length together, and give the results back in input order.
#include <string>
#include <vector>

#include "data/vocab.h"
#include "decode/search.h"

namespace tfm {

// The options are the public API's (include/transformer/search_options.h).
using transformer::kMaxBatchSentences;
using transformer::kMaxInputTokens;
using transformer::TranslateOptions;

struct Translation {
  std::vector<Hypothesis> hypotheses;  // n-best, best first; empty for an empty line
  std::vector<int32_t> source_ids;     // the encoded (and maybe truncated) source
  std::vector<int32_t> prefix_ids;     // the forced target prefix (empty: none)
  bool truncated = false;
};

// Source token ids → translations (for --ids and tests); empty inputs give empty translations.
// With a shortlist, each batch's output is restricted to its selection (not owned). `prefixes`:
// empty, or one forced target prefix per source (beam_search); a prefix longer than
// max_input_tokens is refused, and an empty source's prefix is ignored.
std::vector<Translation> translate_ids(const Transformer& model, const std::vector<std::vector<int32_t>>& sources,
                                       const TranslateOptions& options, const Shortlist* shortlist = nullptr,
                                       const std::vector<std::vector<int32_t>>& prefixes = {});

}  // namespace tfm
