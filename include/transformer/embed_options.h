#pragma once
// The options and result of embedding with a model's encoder (transformer/encoder.h, docs/api.md,
// "Embedding"): how token vectors are pooled, the call's options, and one input's embedding.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "transformer/search_options.h"
#include "transformer/text.h"

namespace transformer {

// How a sequence's hidden states [L, D] become its embedding.
enum class Pooling {
  kMean,  // the mean of its L tokens' states (padding never counts)
  kCls,   // the first token's (an encoder-only model's bos, BERT's [CLS])
  kLast,  // the last token's (its end-of-sentence)
  kNone,  // no pooling: every token's state, [L, D]
  kMax,   // each dimension's largest value over the L tokens (sentence-transformers' max pooling)
};
// "mean", "cls", "last", "none", "max" ↔ Pooling; an unknown name is an Error naming it and them.
Pooling parse_pooling(std::string_view name);
const char* pooling_name(Pooling p);

// An embedding call's options: one struct for the library, the command line (`transformer embed`),
// Python and the server.
// pooling and normalize, when unset, are the model's defaults: those its file records (a
// sentence-transformers import records its Pooling and Normalize modules), else mean pooling, not
// normalized (Encoder::resolve gives the options a call uses).
struct EmbedOptions {
  std::optional<Pooling> pooling;   // unset: the model's (ModelConfig::pooling)
  std::optional<bool> normalize;    // each vector (with kNone each token's) divided by its L2 norm (a
                                    //   zero vector stays zero); unset: the model's
                                    //   (ModelConfig::normalize_embeddings)
  int64_t batch_sentences = 64;     // sentences encoded together, at most kMaxBatchSentences
  int64_t max_input_tokens = 1024;  // a longer input (specials included) is refused, naming it and
                                    //   the limit; at most kMaxInputTokens
  int threads = 0;                  // threads of the call; 0: the process's default (all cores)

  // Throws Error naming the first option out of range.
  void validate() const;
};

// One input's embedding.
struct Embedding {
  std::vector<float> values;  // rows × dim, row-major
  int64_t rows = 0;           // 1 when pooled; kNone: the input's tokens, specials included
  int64_t dim = 0;            // the model's d_model
  std::vector<int32_t> ids;   // the ids encoded, specials included
  Repairs repairs;            // what clean_input changed in the text (none for ids)
};

}  // namespace transformer
