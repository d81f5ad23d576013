// Beam search (beam_search): K hypotheses per sentence, each step's best 2K continuations of a
// sentence ranked together, ended hypotheses kept until the sentence's stopping rule holds.
#include <algorithm>
#include <limits>

#include "decode/search_common.h"

namespace tfm {
namespace search {
namespace {

struct Candidate {
  double score;
  int32_t row, token;
};

// One step of beam search: its logits, their top 2K per row, and the next step's rows as the
// sentences fill them.
struct BeamStep {
  int64_t t = 0;
  StepLogits logits{Tensor()};  // [R, V or V']
  TopK top;                     // [R, 2K] each row's best 2K continuations
  int64_t next_width = 1;
  std::vector<int32_t> next_active;               // [B''] the sentences still decoded
  std::vector<int32_t> next_parent, next_token;   // [R'']
  std::vector<double> next_score;                 // [R'']
};

class BeamSearch {
 public:
  BeamSearch(const Transformer& model, Start start, const Sentences& sources, const SearchOptions& o,
             const Shortlist* shortlist, const Sentences& prefixes);
  std::vector<std::vector<Hypothesis>> run();

 private:
  bool forced(int64_t b, int64_t t) const { return t < static_cast<int64_t>(prefix_of(prefixes_, b).size()); }
  bool step(int64_t t);
  int64_t next_width(int64_t t) const;
  void extend(BeamStep& s, size_t i);
  void gather(const BeamStep& s, size_t i, int64_t b, bool last);
  void gather_row(const BeamStep& s, int64_t b, int32_t r, bool last);
  void rank(int64_t t, int64_t b, bool last);
  void add_ended(std::vector<Hypothesis>& done, Hypothesis h) const;
  bool sentence_done(int64_t t, int64_t b, bool last) const;
  double live_bound(int64_t t, int64_t b) const;
  void reorder(const BeamStep& s);
  void finish();

  const Transformer& model_;
  const ModelConfig& c_;
  const SearchOptions& o_;
  const Sentences& prefixes_;
  const int64_t K_;
  const bool no_better_live_;
  const Context ctx_;
  Start e_;  // the decoding start: its state, length limits and first tokens
  DecodeState& state_;
  const Columns cols_;
  // Rows are grouped by sentence, `width` per active sentence: one while every active sentence is
  // still in its prefix (every beam would start from the same tokens, so one row per sentence is
  // computed and then expanded), then K. A sentence in its prefix has one live row among K.
  std::vector<int32_t> active_;                 // the sentences decoded (at most B)
  std::vector<int32_t> parent_, token_;         // [R]
  std::vector<double> score_;                   // [R] (−inf: a row without a live hypothesis)
  int64_t width_ = 1;
  std::vector<std::vector<Hypothesis>> finished_;  // [B] each sentence's ended hypotheses, best first
  std::vector<StepRecord> steps_;
  std::vector<Candidate> cands_;  // one sentence's continuations at a step
  std::vector<Candidate> live_;   // its best K that do not end there
};

BeamSearch::BeamSearch(const Transformer& model, Start start, const Sentences& sources, const SearchOptions& o,
                       const Shortlist* shortlist, const Sentences& prefixes)
    : model_(model),
      c_(model.config()),
      o_(o),
      prefixes_(prefixes),
      K_(o.beam_size),
      no_better_live_(o.beam_stop == SearchOptions::BeamStop::kNoBetterLive),
      ctx_(model.context()),
      e_(std::move(start)),
      state_(e_.state),
      cols_(restrict_output(model, ctx_, state_, sources, shortlist, prefixes)),
      finished_(sources.size()) {
  const auto B = static_cast<int64_t>(sources.size());
  active_.resize(B);
  parent_.resize(B);
  token_ = e_.first;
  score_.assign(B, 0.0);
  for (int64_t b = 0; b < B; ++b) active_[b] = parent_[b] = static_cast<int32_t>(b);
}

std::vector<std::vector<Hypothesis>> BeamSearch::run() {
  int64_t t = 0;
  while (step(t)) ++t;
  finish();
  return std::move(finished_);
}

// Decodes step t; false once every sentence is done.
bool BeamSearch::step(int64_t t) {
  BeamStep s;
  s.t = t;
  s.logits = StepLogits(model_.decode_step(ctx_, state_, Tensor::from<int32_t>({int64_t(token_.size())}, token_)));
  // Each row's best 2K continuations: enough for the sentence's best 2K overall.
  s.top = select(*s.logits, cols_, 2 * K_, c_, t, o_);
  steps_.push_back(record_of(parent_, token_, state_));
  s.next_width = next_width(t);
  for (size_t i = 0; i < active_.size(); ++i) extend(s, i);
  if (s.next_active.empty()) return false;
  reorder(s);
  width_ = s.next_width;
  active_ = std::move(s.next_active);
  parent_ = std::move(s.next_parent);
  token_ = std::move(s.next_token);
  score_ = std::move(s.next_score);
  return true;
}

// One row per sentence while every active sentence is still in its prefix at step t + 1, else K.
int64_t BeamSearch::next_width(int64_t t) const {
  bool all_forced_next = true;
  for (const int32_t b : active_) all_forced_next = all_forced_next && forced(b, t + 1);
  return all_forced_next ? 1 : K_;
}

// Ranks the continuations of sentence active_[i], keeps its endings, and unless it is done adds
// its best live ones to the next step's rows.
void BeamSearch::extend(BeamStep& s, size_t i) {
  const int64_t b = active_[i];
  const bool last = s.t + 1 >= e_.max_length[b];  // only EOS may follow (unless limit_without_eos)
  gather(s, i, b, last);
  rank(s.t, b, last);
  if (sentence_done(s.t, b, last)) return;
  s.next_active.push_back(static_cast<int32_t>(b));
  for (int64_t k = 0; k < s.next_width; ++k) {
    const bool real = k < static_cast<int64_t>(live_.size());
    const Candidate& l = real ? live_[k] : live_[0];
    s.next_parent.push_back(l.row);
    s.next_token.push_back(l.token);
    s.next_score.push_back(real ? l.score : kNegInf);
  }
}

// The continuations of the live rows of sentence active_[i] (rows i·width to (i+1)·width).
void BeamSearch::gather(const BeamStep& s, size_t i, int64_t b, bool last) {
  cands_.clear();
  for (int64_t k = 0; k < width_; ++k) {
    const int32_t r = static_cast<int32_t>(i * width_ + k);
    if (score_[r] == kNegInf) continue;
    gather_row(s, b, r, last);
  }
}

void BeamSearch::gather_row(const BeamStep& s, int64_t b, int32_t r, bool last) {
  // The prefix's token (never at the maximum length: encode_batch). At the maximum length, or with
  // no token allowed at all (a shortlist whose selection is banned, e.g. only EOS before the
  // minimum length), only EOS may follow, as in greedy search.
  const bool in_prefix = forced(b, s.t);
  if (in_prefix || (last && !o_.limit_without_eos) || s.top.id(r, 0) < 0) {
    const int32_t y = in_prefix ? prefix_of(prefixes_, static_cast<size_t>(b))[static_cast<size_t>(s.t)] : c_.eos_id;
    const bool unscored = in_prefix && s.t < o_.unscored_prefix;
    cands_.push_back(
        {score_[r] + (unscored ? 0.0 : logit_at(s.logits.host(), cols_, r, y) - s.top.lse.data<double>()[r]), r, y});
    return;
  }
  for (int64_t j = 0; j < 2 * K_; ++j)
    if (s.top.id(r, j) >= 0) cands_.push_back({score_[r] + s.top.at(r, j), r, s.top.id(r, j)});
}

// Sorts sentence b's best 2K continuations (enough to refill K live beams even if K of them end
// here): the endings among them join its ended hypotheses, the best K others are live_. At the
// limit with limit_without_eos the best K end there whatever their token.
void BeamSearch::rank(int64_t t, int64_t b, bool last) {
  const size_t top = std::min(cands_.size(), static_cast<size_t>(2 * K_));
  std::partial_sort(cands_.begin(), cands_.begin() + static_cast<std::ptrdiff_t>(top), cands_.end(),
                    [](const Candidate& x, const Candidate& y) {
                      if (x.score != y.score) return x.score > y.score;
                      return x.row != y.row ? x.row < y.row : x.token < y.token;
                    });
  live_.clear();
  auto& done = finished_[b];
  for (size_t rank = 0; rank < top; ++rank) {
    const Candidate& cand = cands_[rank];
    if (last && o_.limit_without_eos) {  // the K best end here, as generate()'s at max_new_tokens
      if (rank >= static_cast<size_t>(K_)) break;
      Hypothesis h = backtrack(steps_, t, cand.row, cand.score, o_, e_.src_lengths.data<int32_t>()[b], c_.heads);
      if (!ends_hypothesis(c_, cand.token)) h.tokens.push_back(cand.token);
      add_ended(done, std::move(h));
    } else if (ends_hypothesis(c_, cand.token)) {  // EOS or a stop id
      // As fairseq: an ending counts only among the best K, so beam 1 is greedy search.
      if (rank < static_cast<size_t>(K_) || last)
        add_ended(done, backtrack(steps_, t, cand.row, cand.score, o_, e_.src_lengths.data<int32_t>()[b], c_.heads));
    } else if (static_cast<int64_t>(live_.size()) < K_) {
      live_.push_back(cand);
    }
  }
  std::sort(done.begin(), done.end(),
            [](const Hypothesis& x, const Hypothesis& y) { return x.normalized > y.normalized; });
}

void BeamSearch::add_ended(std::vector<Hypothesis>& done, Hypothesis h) const {
  if (!no_better_live_ || static_cast<int64_t>(done.size()) < K_) {
    done.push_back(std::move(h));
    return;
  }
  // The beam_size best are kept: it replaces the worst if it is better.
  auto worst = std::min_element(done.begin(), done.end(),
                                [](const Hypothesis& x, const Hypothesis& y) { return x.normalized < y.normalized; });
  if (h.normalized > worst->normalized) *worst = std::move(h);
}

// Done when K hypotheses have ended, or when none of the live ones can beat the n-th best ended
// one: a live score can only fall, and the length penalty is largest at the maximum length, so
// score / max lp bounds what it can reach.
bool BeamSearch::sentence_done(int64_t t, int64_t b, bool last) const {
  if (last || live_.empty()) return true;
  const std::vector<Hypothesis>& done = finished_[b];
  const auto ended = static_cast<int64_t>(done.size());
  if (no_better_live_) {
    // The best live one's score at its current length (t + 1 tokens, no end yet), as Hugging Face.
    return ended >= K_ &&
           live_[0].score / length_penalty(t + 1, o_.length_penalty, o_.length_normalization) <= done.back().normalized;
  }
  if (ended >= K_) return true;
  return ended >= o_.n_best && done[o_.n_best - 1].normalized >= live_bound(t, b);
}

// The best normalized score a live hypothesis of sentence b can still reach.
double BeamSearch::live_bound(int64_t t, int64_t b) const {
  const double lp_max = std::max(length_penalty(t + 2, o_.length_penalty, o_.length_normalization),
                                 length_penalty(e_.max_length[b], o_.length_penalty, o_.length_normalization));
  double bound = kNegInf;
  for (const Candidate& l : live_) bound = std::max(bound, l.score <= 0 ? l.score / lp_max : l.score);
  return bound;
}

// Moves the decoding state to the next step's rows, dropping the sentences that are done.
void BeamSearch::reorder(const BeamStep& s) {
  // The encoder outputs of the sentences still active, by their position in `active`.
  Tensor memory_rows;  // int32 [B'']
  if (s.next_active.size() != active_.size()) {
    std::vector<int32_t> positions;
    for (size_t i = 0, j = 0; i < s.next_active.size(); ++i) {
      while (active_[j] != s.next_active[i]) ++j;
      positions.push_back(static_cast<int32_t>(j));
    }
    memory_rows = Tensor::from<int32_t>({int64_t(positions.size())}, positions);
  }
  model_.reorder(state_, Tensor::from<int32_t>({int64_t(s.next_parent.size())}, s.next_parent), memory_rows);
}

// Keeps each sentence's n best.
void BeamSearch::finish() {
  for (auto& done : finished_) {
    TFM_CHECK(!done.empty(), "beam search ended a sentence without a hypothesis");
    if (static_cast<int64_t>(done.size()) > o_.n_best) done.resize(static_cast<size_t>(o_.n_best));
    if (!o_.return_scores)  // ranked by them, but not returned: as greedy search's
      for (Hypothesis& h : done) h.score = h.normalized = std::numeric_limits<double>::quiet_NaN();
  }
}

}  // namespace

std::vector<std::vector<Hypothesis>> beam_from(const Transformer& model, Start start, const Sentences& sources,
                                               const SearchOptions& o) {
  return BeamSearch(model, std::move(start), sources, o, nullptr, kNoPrefixes).run();
}

}  // namespace search

std::vector<std::vector<Hypothesis>> beam_search(const Transformer& model,
                                                 const std::vector<std::vector<int32_t>>& sources,
                                                 const SearchOptions& o, const Shortlist* shortlist,
                                                 const std::vector<std::vector<int32_t>>& prefixes) {
  o.validate();
  if (o.sampling()) {  // beam size 1 (validate): one drawn hypothesis per sentence
    std::vector<std::vector<Hypothesis>> out;
    for (Hypothesis& h : greedy_search(model, sources, o, shortlist, prefixes)) out.push_back({std::move(h)});
    return out;
  }
  search::Start start = search::start_translation(model, model.context(), sources, o, prefixes, o.beam_size);
  return search::BeamSearch(model, std::move(start), sources, o, shortlist, prefixes).run();
}

}  // namespace tfm
