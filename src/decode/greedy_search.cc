// Greedy search and random sampling (greedy_search): one hypothesis per sentence, token by token
// until EOS, the rows of the sentences that have ended dropped at each step.
#include <limits>

#include "decode/search_common.h"

namespace tfm {
namespace search {
namespace {

// One step of greedy search over its R rows: where the best tokens come from, and each row's choice.
struct GreedyStep {
  int64_t t = 0;
  bool chosen = false;              // the int8 screen chose every row's best token: no logits
  StepLogits logits{Tensor()};      // [R, V or V'] when not chosen
  TopK top;                         // [R, 1] each row's best allowed token, when not chosen
  const Tensor* sampled = nullptr;  // [R, V or V'] the logits on the host, when sampling
  std::vector<int32_t> choice;      // [R] the token forced or drawn; −1: the most probable
};

class GreedySearch {
 public:
  GreedySearch(const Transformer& model, Start start, const Sentences& sources, const SearchOptions& o,
               const Shortlist* shortlist, const Sentences& prefixes);
  std::vector<Hypothesis> run();

 private:
  bool step(int64_t t);
  void project(GreedyStep& s);
  void choose(GreedyStep& s);
  void choose_row(GreedyStep& s, int64_t r, SampleScratch& scratch);
  int32_t best_of(const GreedyStep& s, int64_t r) const;
  double score_of(const GreedyStep& s, int64_t r, int32_t token) const;
  bool advance(const GreedyStep& s);

  const Transformer& model_;
  const ModelConfig& c_;
  const SearchOptions& o_;
  const Sentences& prefixes_;
  const Context ctx_;
  Start e_;  // the decoding start: its state, length limits and first tokens
  DecodeState& state_;
  const Columns cols_;
  // Sampling with top-k 1 is greedy search.
  const bool sampling_;
  // Without scores, each step's choice may come from the int8 screen of the output projection
  // (Transformer::screened_argmax): the same tokens, without the float32 logits.
  const bool screen_;
  std::vector<RngStream> streams_;  // [B] each sentence's draws, when sampling
  std::vector<Hypothesis> out_;     // [B]
  // The rows of the next step, one per sentence not yet ended: its sentence, the row of the
  // previous step it extends, the token it is fed, and its score.
  std::vector<int32_t> rows_, parent_, token_;  // [R]
  std::vector<double> score_;                   // [R]
  std::vector<StepRecord> steps_;
  std::vector<uint8_t> banned_;    // [V or V'] the columns sampling may not draw
  std::vector<int32_t> screened_;  // [R] the screen's choices
};

GreedySearch::GreedySearch(const Transformer& model, Start start, const Sentences& sources, const SearchOptions& o,
                           const Shortlist* shortlist, const Sentences& prefixes)
    : model_(model),
      c_(model.config()),
      o_(o),
      prefixes_(prefixes),
      ctx_(model.context()),
      e_(std::move(start)),
      state_(e_.state),
      cols_(restrict_output(model, ctx_, state_, sources, shortlist, prefixes)),
      sampling_(o.sampling() && o.sampling_topk != 1),
      screen_(!o.return_scores && !sampling_ && model.screens_output()),
      out_(sources.size()) {
  const auto B = static_cast<int64_t>(sources.size());
  if (sampling_)
    for (int64_t b = 0; b < B; ++b) streams_.push_back(sampling_stream(o.seed, sources[b], prefix_of(prefixes, b)));
  rows_.resize(B);  // row → sentence
  parent_.resize(B);
  token_ = e_.first;
  score_.assign(B, 0.0);
  for (int64_t b = 0; b < B; ++b) rows_[b] = parent_[b] = static_cast<int32_t>(b);
}

std::vector<Hypothesis> GreedySearch::run() {
  int64_t t = 0;
  while (step(t)) ++t;
  return std::move(out_);
}

// Decodes step t; false once every sentence has ended.
bool GreedySearch::step(int64_t t) {
  GreedyStep s;
  s.t = t;
  project(s);
  steps_.push_back(record_of(parent_, token_, state_));
  choose(s);
  return advance(s);
}

// Feeds each row's token, then takes the screen's choices, or the logits and their best tokens.
void GreedySearch::project(GreedyStep& s) {
  const Tensor tokens = Tensor::from<int32_t>({int64_t(rows_.size())}, token_);  // int32 [R]
  const Tensor hidden = model_.decode_hidden(ctx_, state_, tokens);              // [R, D]
  s.chosen = screen_ && model_.screened_argmax(ctx_, state_, hidden, banned_columns(cols_, c_, s.t, o_), screened_);
  if (s.chosen) return;
  s.logits = StepLogits(model_.project_step(ctx_, state_, hidden));
  s.top = select(*s.logits, cols_, 1, c_, s.t, o_);
}

// The best allowed token of row r (−1: none allowed).
int32_t GreedySearch::best_of(const GreedyStep& s, int64_t r) const {
  return s.chosen ? screened_[static_cast<size_t>(r)] : s.top.id(r, 0);
}

// Each row's next token: its prefix's while there is one; EOS at the maximum length (or with
// nothing else allowed); else the most probable, or a drawn one.
void GreedySearch::choose(GreedyStep& s) {
  const auto R = static_cast<int64_t>(rows_.size());
  const int64_t n = s.chosen ? 0 : (*s.logits).size(1);
  if (sampling_) {
    s.sampled = &s.logits.host();  // copied before the rows run in parallel
    banned_.assign(static_cast<size_t>(n), 0);
    for (int32_t j : banned_columns(cols_, c_, s.t, o_)) banned_[static_cast<size_t>(j)] = 1;
  }
  s.choice.assign(static_cast<size_t>(R), -1);
  if (sampling_ && R > 1) {  // a pass over each row's logits: rows in parallel, each its own draw
#pragma omp parallel
    {
      SampleScratch scratch;
#pragma omp for schedule(static)
      for (int64_t r = 0; r < R; ++r) choose_row(s, r, scratch);
    }
  } else {
    SampleScratch scratch;
    for (int64_t r = 0; r < R; ++r) choose_row(s, r, scratch);
  }
}

void GreedySearch::choose_row(GreedyStep& s, int64_t r, SampleScratch& scratch) {
  const int64_t b = rows_[r];
  const std::vector<int32_t>& prefix = prefix_of(prefixes_, static_cast<size_t>(b));
  if (s.t < static_cast<int64_t>(prefix.size())) {
    s.choice[r] = prefix[s.t];
  } else if ((s.t + 1 >= e_.max_length[b] && !o_.limit_without_eos) || best_of(s, r) < 0) {
    s.choice[r] = c_.eos_id;
  } else if (sampling_) {
    const double u = streams_[b].uniform_double(static_cast<uint64_t>(s.t));
    const Tensor& z = *s.sampled;  // [R, V or V']
    const int64_t n = z.size(1);
    const int32_t col = z.dtype() == DType::F64 ? sample_column(z.data<double>() + r * n, n, banned_, o_, u, scratch)
                                                : sample_column(z.data<float>() + r * n, n, banned_, o_, u, scratch);
    s.choice[r] = cols_.token_of(col);  // a column is allowed: top.id(r, 0) is one
  }
}

// Row r's score with `token` appended; without scores NaN throughout, whichever way each step chose.
double GreedySearch::score_of(const GreedyStep& s, int64_t r, int32_t token) const {
  if (!o_.return_scores) return std::numeric_limits<double>::quiet_NaN();
  if (s.t < o_.unscored_prefix && s.t < static_cast<int64_t>(prefix_of(prefixes_, static_cast<size_t>(rows_[r])).size()))
    return score_[r];  // a forced token without its log-probability
  return s.choice[r] >= 0 ? score_[r] + (logit_at(s.logits.host(), cols_, r, token) - s.top.lse.data<double>()[r])
                          : score_[r] + s.top.at(r, 0);
}

// Ends the rows that chose EOS or a stop id and keeps the others for the next step; false when none is left.
bool GreedySearch::advance(const GreedyStep& s) {
  std::vector<int32_t> keep, next_rows, next_token;  // [R'']
  std::vector<double> next_score;                    // [R'']
  for (size_t r = 0; r < rows_.size(); ++r) {
    const int64_t b = rows_[r];
    const auto ri = static_cast<int64_t>(r);
    const int32_t best = s.choice[r] >= 0 ? s.choice[r] : best_of(s, ri);
    const double score = score_of(s, ri, best);
    const bool at_limit = o_.limit_without_eos && s.t + 1 >= e_.max_length[b];
    const bool end = ends_hypothesis(c_, best);  // EOS or a stop id
    if (end || at_limit) {
      out_[b] = backtrack(steps_, s.t, static_cast<int32_t>(r), score, o_, e_.src_lengths.data<int32_t>()[b], c_.heads);
      if (!end) {  // ends with its last token, no end of sentence
        if (e_.on_token) e_.on_token(b, best);
        out_[b].tokens.push_back(best);
      }
    } else {
      if (e_.on_token && s.t >= static_cast<int64_t>(prefix_of(prefixes_, static_cast<size_t>(b)).size()))
        e_.on_token(b, best);
      keep.push_back(static_cast<int32_t>(r));
      next_rows.push_back(static_cast<int32_t>(b));
      next_token.push_back(best);
      next_score.push_back(score);
    }
  }
  if (next_rows.empty()) return false;
  if (keep.size() != rows_.size()) {
    const Tensor kept = Tensor::from<int32_t>({int64_t(keep.size())}, keep);  // int32 [R'']
    model_.reorder(state_, kept, kept);  // one hypothesis per sentence: its memory goes with it
  }
  rows_ = std::move(next_rows);
  parent_ = std::move(keep);
  token_ = std::move(next_token);
  score_ = std::move(next_score);
  return true;
}

}  // namespace

std::vector<Hypothesis> greedy_from(const Transformer& model, Start start, const Sentences& sources,
                                    const SearchOptions& o) {
  return GreedySearch(model, std::move(start), sources, o, nullptr, kNoPrefixes).run();
}

}  // namespace search

std::vector<Hypothesis> greedy_search(const Transformer& model, const std::vector<std::vector<int32_t>>& sources,
                                      const SearchOptions& o, const Shortlist* shortlist,
                                      const std::vector<std::vector<int32_t>>& prefixes) {
  search::Start start = search::start_translation(model, model.context(), sources, o, prefixes, /*hypotheses=*/1);
  return search::GreedySearch(model, std::move(start), sources, o, shortlist, prefixes).run();
}

}  // namespace tfm
