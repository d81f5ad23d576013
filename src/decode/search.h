#pragma once
// Decoding as in the paper (§6.1): beam search with a length penalty, and greedy search.
// Sentences of a batch are decoded together, all their beams in one batch of hypotheses, with the
// model's incremental decoding cache (keys and values of earlier tokens; the encoder output's
// keys and values computed once per sentence).
#include <cstdint>
#include <vector>

#include "decode/shortlist.h"
#include "model/transformer.h"

namespace tfm {

// The largest beam accepted: beam search keeps each hypothesis's best 2·K continuations, so its
// memory grows with sentences · K²; estimate_search_bytes says how much before a search starts.
inline constexpr int64_t kMaxBeamSize = 1024;

struct SearchOptions {
  int64_t beam_size = 4;        // 1 = greedy; at most kMaxBeamSize
  double length_penalty = 0.6;  // α of GNMT's lp(Y) = ((5 + |Y|) / 6)^α (Wu et al., 2016); 0 = none
  double max_length_a = 1.0;    // at most a · (source tokens) + b output tokens, end of sentence included
  double max_length_b = 50.0;
  int64_t n_best = 1;           // hypotheses returned per sentence (≤ beam_size)
  int64_t min_length = 0;       // no EOS before this many output tokens (EOS included); benchmarks
                                //   force a fixed length with min_length = max length
  bool record_attention = false;  // keep the encoder-decoder attention of every output token
  const Shortlist* shortlist = nullptr;  // when set, each batch's output is restricted to its selection
                                         //   (not owned; must outlive the search)

  // Throws tfm::Error naming the first option out of range.
  void validate() const;
};

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
std::vector<std::vector<Hypothesis>> beam_search(const Transformer& model,
                                                 const std::vector<std::vector<int32_t>>& sources,
                                                 const SearchOptions& options);
// The most probable token at each step until EOS (ranks by score, not normalized score).
std::vector<Hypothesis> greedy_search(const Transformer& model, const std::vector<std::vector<int32_t>>& sources,
                                      const SearchOptions& options);

}  // namespace tfm
