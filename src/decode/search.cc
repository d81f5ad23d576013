#include "decode/search.h"

#include "ops/top_k.h"

#include <algorithm>
#include <cmath>
#include <limits>

void transformer::SearchOptions::validate() const {
  using tfm::kMaxBeamSize;
  TFM_CHECK(beam_size >= 1 && beam_size <= kMaxBeamSize, "beam size must be in [1, ", kMaxBeamSize, "], got ",
            beam_size);
  TFM_CHECK(n_best >= 1 && n_best <= beam_size, "n-best must be in [1, beam size ", beam_size, "], got ", n_best);
  TFM_CHECK(std::isfinite(length_penalty), "length penalty must be finite, got ", length_penalty);
  TFM_CHECK(min_length >= 0, "the minimum output length must be >= 0, got ", min_length);
  TFM_CHECK(max_length_a >= 0 && max_length_b >= 0 && max_length_a + max_length_b >= 1,
            "the maximum output length a * source + b needs a, b >= 0 and a + b >= 1, got a = ", max_length_a,
            ", b = ", max_length_b);
}

namespace tfm {

int64_t estimate_search_bytes(const ModelConfig& c, int64_t sentences, int64_t source_tokens,
                              const SearchOptions& o) {
  // In doubles: a huge beam or length must give a huge estimate, not an overflowed one.
  const double K = static_cast<double>(o.beam_size), B = static_cast<double>(sentences);
  const double H = B * K;                                          // hypotheses decoded together
  const double S = static_cast<double>(source_tokens) + 1;         // with EOS
  const double cap = std::max(1.0, std::floor(o.max_length_a * static_cast<double>(source_tokens) + o.max_length_b));
  const double D = static_cast<double>(c.d_model), F = static_cast<double>(c.d_ff), V = static_cast<double>(c.vocab_size);
  const double heads = static_cast<double>(c.heads), Ld = static_cast<double>(c.decoder_layers);
  const double f = 4;  // bytes of a float32
  double bytes = Ld * 2 * cap * H * D * f                         // self-attention cache [cap, H, D] per layer
                 + Ld * 2 * B * S * D * f                         // encoder keys and values per layer
                 + B * S * (8 * D + F) * f + B * heads * S * S * f  // the encoder's activations
                 + H * (8 * D + F) * f + H * heads * (cap + S) * f  // one step's activations
                 + 2 * H * V * f                                  // its logits (and their copy in search)
                 + H * (K > 1 ? 2 * K : 1) * 12                   // top-k: a double and an id per entry
                 + (K > 1 ? 2 * K * K * 16 : 0)                   // one sentence's candidates
                 + cap * H * 8                                    // each step's parents and tokens
                 + B * K * cap * 8;                               // ended hypotheses' tokens
  if (o.record_attention) bytes += 2 * cap * Ld * H * heads * S * f;  // each step's, then each hypothesis's
  return bytes >= 9e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(bytes);
}

double length_penalty(int64_t length, double alpha) {
  return std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Encoded {
  Tensor src, src_lengths, memory;
  std::vector<int64_t> max_length;  // per sentence, EOS included
  int64_t capacity = 0;
};

Encoded encode_batch(const Transformer& model, const Context& ctx, const std::vector<std::vector<int32_t>>& sources,
                     const SearchOptions& o) {
  o.validate();
  TFM_CHECK(!sources.empty(), "decoding an empty batch");
  const ModelConfig& c = model.config();
  // make_batch needs targets; decoding has none, so give each sentence an empty one.
  const Batch batch = make_batch(sources, std::vector<std::vector<int32_t>>(sources.size()), c);
  Encoded e;
  e.src = batch.src;
  e.src_lengths = batch.src_lengths;
  e.memory = model.encode(ctx, batch.src, batch.src_lengths, nullptr);
  for (const auto& s : sources) {
    const double limit = o.max_length_a * static_cast<double>(s.size()) + o.max_length_b;
    e.max_length.push_back(std::max<int64_t>(1, static_cast<int64_t>(std::floor(limit))));
    e.capacity = std::max(e.capacity, e.max_length.back());
  }
  return e;
}

// Which token each column of the step's logits scores: all V in order, or a shortlist's V'.
struct Columns {
  std::vector<int32_t> token;   // column → token id; empty: the identity
  std::vector<int32_t> column;  // token id → column, −1 when not in the shortlist; empty: the identity
  int32_t token_of(int32_t col) const { return token.empty() || col < 0 ? col : token[col]; }
  int32_t column_of(int32_t id) const { return column.empty() ? id : column[id]; }
};

// With a shortlist, restricts the state's output to the batch's selection (which always holds EOS).
Columns restrict_output(const Transformer& model, const Context& ctx, DecodeState& state,
                        const std::vector<std::vector<int32_t>>& sources, const Shortlist* shortlist) {
  Columns cols;
  if (!shortlist) return cols;
  const ModelConfig& c = model.config();
  shortlist->check_vocabulary(c.vocab_size, "", "being decoded");
  cols.token = shortlist->select(sources, {c.eos_id});
  model.restrict_output(ctx, state, cols.token);
  cols.column.assign(static_cast<size_t>(c.vocab_size), -1);
  for (size_t j = 0; j < cols.token.size(); ++j) cols.column[cols.token[j]] = static_cast<int32_t>(j);
  return cols;
}

// Token v's logit as a double: logits [rows, V or V'] are float32 or float64; v must have a column.
double logit_at(const Tensor& logits, const Columns& cols, int64_t r, int32_t v) {
  const int64_t V = logits.size(1), j = cols.column_of(v);
  return logits.dtype() == DType::F64 ? logits.data<double>()[r * V + j] : logits.data<float>()[r * V + j];
}

// The best `k` allowed continuations of every row and each row's log Σ exp.
struct TopK {
  Tensor logp, ids, lse;  // float64 [R, k], int32 [R, k], float64 [R]
  double at(int64_t r, int64_t j) const { return logp.data<double>()[r * logp.size(1) + j]; }
  int32_t id(int64_t r, int64_t j) const { return ids.data<int32_t>()[r * ids.size(1) + j]; }
};

// Tokens a hypothesis may not produce at step t (its (t+1)-th token): padding, BOS, and EOS before
// the minimum length.
TopK select(const Tensor& logits, const Columns& cols, int64_t k, const ModelConfig& c, int64_t t,
            const SearchOptions& o) {
  std::vector<int32_t> banned;
  for (int32_t id : {c.pad_id, c.bos_id, t + 1 < o.min_length ? c.eos_id : -1})
    if (id >= 0 && cols.column_of(id) >= 0) banned.push_back(cols.column_of(id));
  const int64_t R = logits.size(0);
  TopK top{Tensor::empty({R, k}, DType::F64), Tensor::empty({R, k}, DType::I32), Tensor::empty({R}, DType::F64)};
  ops::top_k_logprobs(logits, k, banned, top.logp, top.ids, top.lse);
  if (!cols.token.empty())
    for (int32_t* id = top.ids.data<int32_t>(), *end = id + top.ids.numel(); id != end; ++id) *id = cols.token_of(*id);
  return top;
}

// One step's bookkeeping for backtracking: for each row, the row of the previous step it extends,
// the token it was fed, and (when recorded) each layer's attention [rows, H, 1, S].
struct StepRecord {
  std::vector<int32_t> parent, token;
  std::vector<Tensor> attention;
};

// Follows a hypothesis back from (step, row), where it produced EOS.
Hypothesis backtrack(const std::vector<StepRecord>& steps, int64_t step, int32_t row, double score, double alpha,
                     bool with_attention, int64_t src_len, int64_t heads) {
  Hypothesis h;
  h.score = score;
  const int64_t length = step + 1;  // tokens including EOS
  h.normalized = score / length_penalty(length, alpha);
  std::vector<int32_t> chain(static_cast<size_t>(length));  // row at each step
  int32_t r = row;
  for (int64_t t = step; t >= 0; --t) {
    chain[t] = r;
    if (t > 0) h.tokens.push_back(steps[t].token[r]);
    r = steps[t].parent[r];
  }
  std::reverse(h.tokens.begin(), h.tokens.end());
  if (with_attention) {
    const int64_t layers = static_cast<int64_t>(steps[0].attention.size());
    h.attention = Tensor::zeros({layers, heads, length, src_len});
    float* out = h.attention.data<float>();
    for (int64_t t = 0; t < length; ++t)
      for (int64_t l = 0; l < layers; ++l) {
        const Tensor& a = steps[t].attention[l];  // [rows, H, 1, S_batch]
        const Tensor af = a.dtype() == DType::F32 ? a : a.to(DType::F32);
        const int64_t s_batch = a.size(3);
        const float* src = af.data<float>() + chain[t] * heads * s_batch;
        for (int64_t hd = 0; hd < heads; ++hd)
          for (int64_t s = 0; s < src_len; ++s)
            out[((l * heads + hd) * length + t) * src_len + s] = src[hd * s_batch + s];
      }
  }
  return h;
}

StepRecord record_of(const std::vector<int32_t>& parent, const std::vector<int32_t>& token, const DecodeState& state) {
  StepRecord r{parent, token, {}};
  if (state.record_attention) r.attention = state.cross_attention;
  return r;
}
}  // namespace

std::vector<Hypothesis> greedy_search(const Transformer& model, const std::vector<std::vector<int32_t>>& sources,
                                      const SearchOptions& o, const Shortlist* shortlist) {
  const Context ctx = model.context();
  const ModelConfig& c = model.config();
  Encoded e = encode_batch(model, ctx, sources, o);
  DecodeState state = model.start_decoding(ctx, e.memory, e.src_lengths, e.capacity, o.record_attention);
  const Columns cols = restrict_output(model, ctx, state, sources, shortlist);
  const int64_t B = static_cast<int64_t>(sources.size());
  std::vector<Hypothesis> out(static_cast<size_t>(B));
  std::vector<int32_t> rows(B), parent(B), token(B, c.bos_id);  // row → sentence
  for (int64_t b = 0; b < B; ++b) rows[b] = parent[b] = static_cast<int32_t>(b);
  std::vector<double> score(B, 0.0);
  std::vector<StepRecord> steps;
  for (int64_t t = 0; !rows.empty(); ++t) {
    const Tensor logits = model.decode_step(ctx, state, Tensor::from<int32_t>({int64_t(rows.size())}, token));
    const TopK top = select(logits, cols, 1, c, t, o);
    steps.push_back(record_of(parent, token, state));
    std::vector<int32_t> keep, next_rows, next_token;
    std::vector<double> next_score;
    for (size_t r = 0; r < rows.size(); ++r) {
      const int64_t b = rows[r];
      const int64_t ri = static_cast<int64_t>(r);
      // At the maximum length (or with nothing else allowed) only EOS may follow.
      const bool eos_only = t + 1 >= e.max_length[b] || top.id(ri, 0) < 0;
      const int32_t best = eos_only ? c.eos_id : top.id(ri, 0);
      const double lp = eos_only ? logit_at(logits, cols, ri, c.eos_id) - top.lse.data<double>()[ri] : top.at(ri, 0);
      const double s = score[r] + lp;
      if (best == c.eos_id) {
        out[b] = backtrack(steps, t, static_cast<int32_t>(r), s, o.length_penalty, o.record_attention,
                           e.src_lengths.data<int32_t>()[b], c.heads);
      } else {
        keep.push_back(static_cast<int32_t>(r));
        next_rows.push_back(static_cast<int32_t>(b));
        next_token.push_back(best);
        next_score.push_back(s);
      }
    }
    if (next_rows.empty()) break;
    if (keep.size() != rows.size()) {
      const Tensor kept = Tensor::from<int32_t>({int64_t(keep.size())}, keep);
      model.reorder(state, kept, kept);  // one hypothesis per sentence: its memory goes with it
    }
    rows = next_rows;
    parent = keep;
    token = next_token;
    score = next_score;
  }
  return out;
}

std::vector<std::vector<Hypothesis>> beam_search(const Transformer& model,
                                                 const std::vector<std::vector<int32_t>>& sources,
                                                 const SearchOptions& o, const Shortlist* shortlist) {
  o.validate();
  const Context ctx = model.context();
  const ModelConfig& c = model.config();
  const int64_t K = o.beam_size, B = static_cast<int64_t>(sources.size());
  Encoded e = encode_batch(model, ctx, sources, o);
  DecodeState state = model.start_decoding(ctx, e.memory, e.src_lengths, e.capacity, o.record_attention, K);
  const Columns cols = restrict_output(model, ctx, state, sources, shortlist);

  // Rows are grouped by sentence, `width` per active sentence: one at the first step (every beam
  // would start from the same BOS, so one row per sentence is computed and expanded), then K.
  std::vector<int32_t> active(B), parent(B), token(B, c.bos_id);
  std::vector<double> score(B, 0.0);
  for (int64_t b = 0; b < B; ++b) active[b] = parent[b] = static_cast<int32_t>(b);
  int64_t width = 1;
  std::vector<std::vector<Hypothesis>> finished(static_cast<size_t>(B));
  std::vector<StepRecord> steps;
  struct Candidate {
    double score;
    int32_t row, token;
  };
  std::vector<Candidate> cands;
  for (int64_t t = 0; !active.empty(); ++t) {
    const Tensor logits = model.decode_step(ctx, state, Tensor::from<int32_t>({int64_t(token.size())}, token));
    // Each row's best 2K continuations: enough for the sentence's best 2K overall.
    const TopK top = select(logits, cols, 2 * K, c, t, o);
    steps.push_back(record_of(parent, token, state));
    std::vector<int32_t> next_active, next_parent, next_token;
    std::vector<double> next_score;
    for (size_t i = 0; i < active.size(); ++i) {
      const int64_t b = active[i];
      const bool last = t + 1 >= e.max_length[b];  // only EOS may follow
      cands.clear();
      for (int64_t k = 0; k < width; ++k) {
        const int32_t r = static_cast<int32_t>(i * width + k);
        if (score[r] == kNegInf) continue;
        // At the maximum length, or with no token allowed at all (a shortlist whose selection is
        // banned, e.g. only EOS before the minimum length), only EOS may follow, as in greedy search.
        if (last || top.id(r, 0) < 0) {
          cands.push_back({score[r] + logit_at(logits, cols, r, c.eos_id) - top.lse.data<double>()[r], r, c.eos_id});
          continue;
        }
        for (int64_t j = 0; j < 2 * K; ++j)
          if (top.id(r, j) >= 0) cands.push_back({score[r] + top.at(r, j), r, top.id(r, j)});
      }
      // The best 2K: enough to refill K live beams even if K of them end here.
      const size_t top = std::min(cands.size(), static_cast<size_t>(2 * K));
      std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(top), cands.end(),
                        [](const Candidate& a, const Candidate& b) {
                          return a.score != b.score ? a.score > b.score : (a.row != b.row ? a.row < b.row : a.token < b.token);
                        });
      std::vector<Candidate> live;
      auto& done = finished[b];
      for (size_t rank = 0; rank < top; ++rank) {
        const Candidate& cand = cands[rank];
        if (cand.token == c.eos_id) {
          // As fairseq: an ending counts only among the best K, so beam 1 is greedy search.
          if (rank < static_cast<size_t>(K) || last)
            done.push_back(backtrack(steps, t, cand.row, cand.score, o.length_penalty, o.record_attention,
                                     e.src_lengths.data<int32_t>()[b], c.heads));
        } else if (static_cast<int64_t>(live.size()) < K) {
          live.push_back(cand);
        }
      }
      std::sort(done.begin(), done.end(), [](const Hypothesis& x, const Hypothesis& y) { return x.normalized > y.normalized; });
      // Done when K hypotheses have ended, or when none of the live ones can beat the n-th best
      // ended one: a live score can only fall, and the length penalty is largest at the maximum
      // length, so score / max lp bounds what it can reach.
      bool stop = last || live.empty() || static_cast<int64_t>(done.size()) >= K;
      if (!stop && static_cast<int64_t>(done.size()) >= o.n_best) {
        const double lp_max = std::max(length_penalty(t + 2, o.length_penalty),
                                       length_penalty(e.max_length[b], o.length_penalty));
        double bound = kNegInf;
        for (const Candidate& l : live) bound = std::max(bound, l.score <= 0 ? l.score / lp_max : l.score);
        stop = done[o.n_best - 1].normalized >= bound;
      }
      if (stop) continue;
      next_active.push_back(static_cast<int32_t>(b));
      for (int64_t k = 0; k < K; ++k) {
        const bool real = k < static_cast<int64_t>(live.size());
        const Candidate& l = real ? live[k] : live[0];
        next_parent.push_back(l.row);
        next_token.push_back(l.token);
        next_score.push_back(real ? l.score : kNegInf);
      }
    }
    if (next_active.empty()) break;
    // The encoder outputs of the sentences still active, by their position in `active`.
    Tensor memory_rows;
    if (next_active.size() != active.size()) {
      std::vector<int32_t> positions;
      for (size_t i = 0, j = 0; i < next_active.size(); ++i) {
        while (active[j] != next_active[i]) ++j;
        positions.push_back(static_cast<int32_t>(j));
      }
      memory_rows = Tensor::from<int32_t>({int64_t(positions.size())}, positions);
    }
    model.reorder(state, Tensor::from<int32_t>({int64_t(next_parent.size())}, next_parent), memory_rows);
    width = K;
    active = next_active;
    parent = next_parent;
    token = next_token;
    score = next_score;
  }
  for (auto& done : finished) {
    TFM_CHECK(!done.empty(), "beam search ended a sentence without a hypothesis");
    if (static_cast<int64_t>(done.size()) > o.n_best) done.resize(static_cast<size_t>(o.n_best));
  }
  return finished;
}

}  // namespace tfm
