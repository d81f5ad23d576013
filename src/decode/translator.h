#pragma once
// Translating text: encode each line with the vocabulary, decode batches of sentences of similar
// length together, and give the results back in input order.
#include <string>
#include <vector>

#include "data/vocab.h"
#include "decode/search.h"

namespace tfm {

// The largest batch and input length accepted (with kMaxBeamSize, the documented maxima).
inline constexpr int64_t kMaxBatchSentences = 4096;
inline constexpr int64_t kMaxInputTokens = 16384;

struct TranslateOptions {
  SearchOptions search;
  int64_t batch_sentences = 64;     // sentences decoded together, at most kMaxBatchSentences
  int64_t max_input_tokens = 1024;  // longer inputs are cut to this many tokens, at most kMaxInputTokens
  // A translation whose decoding is estimated (estimate_search_bytes, for the worst batch, times the
  // batches in flight) to need more memory than this is refused before it starts, naming the
  // estimate. Bytes; -1: 80% of the memory available when it starts; 0: no limit.
  int64_t max_memory = -1;
  // Batches decoded at the same time, each by one thread (CTranslate2's inter_threads): a step of
  // one batch on one thread wastes none of its time waiting for the other threads, which a batch
  // split over threads does at every operation. 0: as many as there are threads when the input has
  // at least two batches per thread, else 1; 1: one batch at a time, each operation on every thread.
  // More batches in flight hold more decoding caches in memory.
  int64_t parallel_batches = 0;

  // Throws tfm::Error naming the first option out of range.
  void validate() const;
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
