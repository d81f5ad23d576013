#pragma once
// Translating text: encode each line with the vocabulary, decode batches of sentences of similar
// length together, and give the results back in input order.
#include <string>
#include <vector>

#include "data/vocab.h"
#include "decode/search.h"

namespace tfm {

struct TranslateOptions {
  SearchOptions search;
  int64_t batch_sentences = 64;  // sentences decoded together
  int64_t max_input_tokens = 1024;  // longer inputs are cut to this many tokens
};

struct Translation {
  std::vector<Hypothesis> hypotheses;  // n-best, best first; empty for an empty line
  std::vector<int32_t> source_ids;     // the encoded (and maybe truncated) source
  bool truncated = false;
};

// Source token ids → translations (for --ids and tests); empty inputs give empty translations.
std::vector<Translation> translate_ids(const Transformer& model, const std::vector<std::vector<int32_t>>& sources,
                                       const TranslateOptions& options);
std::vector<Translation> translate_lines(const Transformer& model, const Vocab& vocab,
                                         const std::vector<std::string>& lines, const TranslateOptions& options);

}  // namespace tfm
