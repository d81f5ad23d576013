#pragma once
// Decoding as in the paper (§6.1): beam search with a length penalty, and greedy search; random
// sampling; a forced target prefix for each.
// Sentences of a batch are decoded together, all their beams in one batch of hypotheses, with the
// model's incremental decoding cache (keys and values of earlier tokens; the encoder output's
// keys and values computed once per sentence).
//
// Shapes in the decode layer's comments use the letters of src/layers/context.h (B sentences of a
// batch, S source and T target tokens with EOS, D model width, H heads, V vocabulary and V' a
// shortlist's selection, K the beam size, R the hypothesis rows decoded at a step: at most B·K, one
// per sentence not yet ended in greedy search), and these of the search's own: k the top k
// selected per row; B'' and R'' the sentences and rows kept for the next step.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/rng.h"
#include "decode/shortlist.h"
#include "model/transformer.h"
#include "transformer/search_options.h"

namespace tfm {

// The options (beam size, length penalty, limits, attention) are the public API's
// (include/transformer/search_options.h); kMaxBeamSize is the largest beam accepted.
using transformer::kMaxBeamSize;
using transformer::SearchOptions;

struct Hypothesis {
  std::vector<int32_t> tokens;  // without BOS and EOS
  double score = 0;             // Σ log p of the tokens and EOS
  double normalized = 0;        // score / lp(|tokens| + 1): what beam search ranks by
  // When recorded: encoder-decoder attention, over its own source (EOS included, no padding).
  Tensor attention;  // [decoder layers, H, |tokens| + 1, S]
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
double length_penalty(int64_t length, double alpha,
                      SearchOptions::LengthNormalization form = SearchOptions::LengthNormalization::kGnmt);

// n-best hypotheses per sentence (best first), for a batch of source sentences (ids without EOS).
// With a shortlist, the output is restricted to the batch's selection (not owned), which then also
// holds the prefixes' tokens. `prefixes`: empty, or one forced target prefix per sentence (ids
// without BOS, maybe empty), fed by teacher forcing before the search starts; every hypothesis
// begins with its sentence's prefix and its score counts the prefix's log-probabilities. With
// sampling options (beam size 1), this is sample_search's single hypothesis per sentence.
std::vector<std::vector<Hypothesis>> beam_search(const Transformer& model,
                                                 const std::vector<std::vector<int32_t>>& sources,
                                                 const SearchOptions& options, const Shortlist* shortlist = nullptr,
                                                 const std::vector<std::vector<int32_t>>& prefixes = {});
// One hypothesis per sentence, token by token until EOS: the most probable token at each step
// (ranks by score, not normalized score), or with SearchOptions::sampling() one drawn at random as
// the options say. Prefixes as for beam_search.
std::vector<Hypothesis> greedy_search(const Transformer& model, const std::vector<std::vector<int32_t>>& sources,
                                      const SearchOptions& options, const Shortlist* shortlist = nullptr,
                                      const std::vector<std::vector<int32_t>>& prefixes = {});

// Generation with a decoder-only model: each prompt's continuations (n-best, best first; the
// tokens after the prompt, without EOS). A prompt is fed as given (at least one token; BOS is the
// caller's to add), and is checked to hold vocabulary ids only. The search (greedy, beam or
// sampling) is translation's, started from the prompt instead of an encoder output: at most
// max_new_tokens tokens are generated, at least min_new_tokens before EOS. SearchOptions'
// max_length_a/b, min_length and record_attention are not read (the limits are these);
// prompts of different lengths are decoded in groups of one length. With `on_token` (greedy search
// and sampling only), each token is reported as it is chosen: (prompt index, token id).
using TokenCallback = std::function<void(int64_t, int32_t)>;
std::vector<std::vector<Hypothesis>> generate_search(const Transformer& model,
                                                     const std::vector<std::vector<int32_t>>& prompts,
                                                     const SearchOptions& options, int64_t max_new_tokens,
                                                     int64_t min_new_tokens, const TokenCallback& on_token = {});

// The Philox stream of a sentence's sampling draws (SearchOptions::seed): key the seed, stream the
// XXH3-64 of its source ids and prefix ids (little-endian int32, the prefix after a −1).
RngStream sampling_stream(uint64_t seed, const std::vector<int32_t>& source, const std::vector<int32_t>& prefix);

// One sampling draw: the column of a row of logits (`n` values, float32 or float64) drawn with the
// uniform number u ∈ [0, 1) from the distribution SearchOptions' sampling fields define (temperature,
// top-k, top-p over the columns not banned), or −1 when every column is banned. Ties rank the lower
// column first. `scratch` is reused between calls.
struct SampleScratch {
  std::vector<std::pair<double, int32_t>> candidates;
};
template <typename T>
int32_t sample_column(const T* logits, int64_t n, const std::vector<uint8_t>& banned, const SearchOptions& options,
                      double u, SampleScratch& scratch);

}  // namespace tfm
