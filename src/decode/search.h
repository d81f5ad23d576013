#pragma once
// Decoding as in the paper (§6.1): beam search with a length penalty, and greedy search.
// Sentences of a batch are decoded together, all their beams in one batch of hypotheses, with the
// model's incremental decoding cache (keys and values of earlier tokens; the encoder output's
// keys and values computed once per sentence).
#include <cstdint>
#include <vector>

#include "decode/shortlist.h"
#include "model/transformer.h"
#include "transformer/translator.h"

namespace tfm {

// The options (beam size, length penalty, limits, attention) are the public API's
// (include/transformer/translator.h); kMaxBeamSize is the largest beam accepted.
using transformer::kMaxBeamSize;
using transformer::SearchOptions;

struct Hypothesis {
  std::vector<int32_t> tokens;  // without BOS and EOS
  double score = 0;             // Σ log p of the tokens and EOS
  double normalized = 0;        // score / lp(|tokens| + 1): what beam search ranks by
  // When recorded: encoder-decoder attention [layers, heads, |tokens| + 1, source length incl. EOS].
  Tensor attention;
};

// An estimate of the memory (bytes) a search of `sentences` sources of at most `source_tokens` tokens
// needs beyond the model's weights (within 10% of the measured peak for beams of 4 to 1,024; below
// the few tens of MiB of per-thread scratch that dominate greedy search): the decoding caches (the self-attention keys and values
// of every hypothesis at every output position, the encoder's keys and values), one step's
// activations and logits, the top-k of every hypothesis (sentences · K · 2K entries), the
// bookkeeping of every step for backtracking, and with record_attention the recorded attention.
int64_t estimate_search_bytes(const ModelConfig& config, int64_t sentences, int64_t source_tokens,
                              const SearchOptions& options);

// The length penalty of a hypothesis of `length` tokens (EOS included).
double length_penalty(int64_t length, double alpha);

// n-best hypotheses per sentence (best first), for a batch of source sentences (ids without EOS).
// With a shortlist, the output is restricted to the batch's selection (not owned).
std::vector<std::vector<Hypothesis>> beam_search(const Transformer& model,
                                                 const std::vector<std::vector<int32_t>>& sources,
                                                 const SearchOptions& options, const Shortlist* shortlist = nullptr);
// The most probable token at each step until EOS (ranks by score, not normalized score).
std::vector<Hypothesis> greedy_search(const Transformer& model, const std::vector<std::vector<int32_t>>& sources,
                                      const SearchOptions& options, const Shortlist* shortlist = nullptr);

}  // namespace tfm
