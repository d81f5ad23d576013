#pragma once
// Embedding token sequences with a model's encoder: batches of sentences of similar length encoded
// together, each sentence's hidden states pooled (mean, first, last, max or none) and optionally
// L2-normalized, the results in input order.
#include <vector>

#include "model/transformer.h"
#include "transformer/embed_options.h"

namespace tfm {

// The options with pooling and normalize, where unset, the model's defaults (ModelConfig::pooling,
// normalize_embeddings).
transformer::EmbedOptions resolve_embed_options(const ModelConfig& config, const transformer::EmbedOptions& options);

// sequences: the ids the encoder reads, specials included, each non-empty; types: empty, or one
// sequence of token types per input of the same length. Throws SentenceError for a sequence over
// options.max_input_tokens or past the model's learned positions. Unset pooling and normalize are
// the model's (resolve_embed_options).
std::vector<transformer::Embedding> embed_ids(const Transformer& model, const std::vector<std::vector<int32_t>>& sequences,
                                              const std::vector<std::vector<int32_t>>& types,
                                              const transformer::EmbedOptions& options);

// Pools one sequence's hidden states h [L, D] (row-major) as `pooling` says into `out` (rows × D),
// normalizing each row when `normalize`.
void pool_hidden(const float* h, int64_t L, int64_t D, transformer::Pooling pooling, bool normalize,
                 transformer::Embedding& out);

}  // namespace tfm
