#pragma once
// What greedy and beam search share: the encoded batch and its length limits, the output's columns
// (a shortlist's selection), each step's logits and their top k, and the per-step records that
// ended hypotheses are traced back through. Internal to the decode layer (shapes: search.h).
#include <cstdint>
#include <limits>
#include <vector>

#include "decode/search.h"

namespace tfm::search {

inline constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The source ids and prefixes of a batch of sentences, as the searches take them.
using Sentences = std::vector<std::vector<int32_t>>;

inline const Sentences kNoPrefixes;  // what a search without prefixes reads

// The prefix of sentence b (empty when there are none).
const std::vector<int32_t>& prefix_of(const Sentences& prefixes, size_t b);

// Where a search starts (search.h's decoding start), as the model provides it: translation encodes
// the sources and starts decoding over their encoder output (start_translation); generation starts
// an empty cache and feeds each prompt but its last token (start_generation). Either way each
// sentence's first step feeds one token (BOS, or the prompt's last) and the search goes on from there.
struct Start {
  DecodeState state;
  Tensor src_lengths;               // int32 [B], the sources' lengths with EOS (generation: zeros)
  std::vector<int64_t> max_length;  // per sentence, output tokens EOS included
  std::vector<int32_t> first;       // [B] the token each sentence's first step feeds
  // Called with (sentence, token) for each token greedy search outputs, as it outputs it
  // (streaming); not for the end of sentence, nor a prefix's tokens.
  TokenCallback on_token;
};

// Validates the options and prefixes, encodes the batch and starts decoding it, `hypotheses` rows
// per sentence.
Start start_translation(const Transformer& model, const Context& ctx, const Sentences& sources, const SearchOptions& o,
                        const Sentences& prefixes, int64_t hypotheses);

// Starts generating from prompts of one length P (decoder-only), `hypotheses` rows each: their
// first P − 1 tokens go into the cache; each first step feeds the last. The cache holds the prompt
// and max_new + 1 steps (the last one's logits score EOS).
Start start_generation(const Transformer& model, const Context& ctx, const Sentences& prompts, int64_t max_new,
                       int64_t hypotheses);

// The searches from a start (generation's; translation's go through beam_search and greedy_search).
std::vector<Hypothesis> greedy_from(const Transformer& model, Start start, const Sentences& sources,
                                    const SearchOptions& o);
std::vector<std::vector<Hypothesis>> beam_from(const Transformer& model, Start start, const Sentences& sources,
                                               const SearchOptions& o);

// A step's logits [R, V or V'] where decode_step left them (on a GPU the selection runs there and
// only its k best per row come back), and a copy on the host made on first use: the logit of a
// prefix's token or of a forced EOS, or sampling.
class StepLogits {
 public:
  explicit StepLogits(Tensor logits) : logits_(std::move(logits)) {}
  const Tensor& operator*() const { return logits_; }
  const Tensor& host() const {
    if (!host_.defined()) host_ = logits_.to_host();
    return host_;
  }

 private:
  Tensor logits_;         // [R, V or V']
  mutable Tensor host_;   // [R, V or V'] on the host, once needed
};

// Which token each column of the step's logits scores: all V in order, or a shortlist's V'.
struct Columns {
  std::vector<int32_t> token;   // column → token id; empty: the identity
  std::vector<int32_t> column;  // token id → column, −1 when not in the shortlist; empty: the identity
  int32_t token_of(int32_t col) const { return token.empty() || col < 0 ? col : token[col]; }
  int32_t column_of(int32_t id) const { return column.empty() ? id : column[id]; }
};

// With a shortlist, restricts the state's output to the batch's selection (which always holds EOS,
// the stop ids and the prefixes' tokens).
Columns restrict_output(const Transformer& model, const Context& ctx, DecodeState& state, const Sentences& sources,
                        const Shortlist* shortlist, const Sentences& prefixes);

// Token v's logit as a double: logits [R, V or V'] are float32 or float64; v must have a column.
double logit_at(const Tensor& logits, const Columns& cols, int64_t r, int32_t v);

// The best `k` allowed continuations of every row and each row's log Σ exp.
struct TopK {
  Tensor logp;  // float64 [R, k]
  Tensor ids;   // int32 [R, k], token ids (−1: fewer allowed)
  Tensor lse;   // float64 [R]
  double at(int64_t r, int64_t j) const { return logp.data<double>()[r * logp.size(1) + j]; }
  int32_t id(int64_t r, int64_t j) const { return ids.data<int32_t>()[r * ids.size(1) + j]; }
};

// Whether `token` ends a hypothesis: eos_id, or one of the model's further stop_ids. Either ends it
// the same way: scored, and not part of its tokens.
bool ends_hypothesis(const ModelConfig& c, int32_t token);

// Tokens a hypothesis may not produce at step t (its (t+1)-th token): padding, BOS, and before the
// minimum length EOS and the stop ids; as columns of the logits.
std::vector<int32_t> banned_columns(const Columns& cols, const ModelConfig& c, int64_t t, const SearchOptions& o);

// The top k of every row of logits [R, V or V'], on the host, as token ids.
TopK select(const Tensor& logits, const Columns& cols, int64_t k, const ModelConfig& c, int64_t t,
            const SearchOptions& o);

// One step's bookkeeping for backtracking: for each row, the row of the previous step it extends,
// the token it was fed, and (when recorded) each layer's attention.
struct StepRecord {
  std::vector<int32_t> parent, token;  // [R]
  std::vector<Tensor> attention;       // per decoder layer: [R, H, 1, S]
};

StepRecord record_of(const std::vector<int32_t>& parent, const std::vector<int32_t>& token, const DecodeState& state);

// Follows a hypothesis back from (step, row), where it produced EOS; src_len: its source's length
// with EOS.
Hypothesis backtrack(const std::vector<StepRecord>& steps, int64_t step, int32_t row, double score,
                     const SearchOptions& o, int64_t src_len, int64_t heads);

}  // namespace tfm::search
