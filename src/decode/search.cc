#include "decode/search.h"

#include "io/checksum.h"
#include "ops/top_k.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

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

double length_penalty(int64_t length, double alpha, SearchOptions::LengthNormalization form) {
  const double L = static_cast<double>(length);
  return form == SearchOptions::LengthNormalization::kPower ? std::pow(L, alpha) : std::pow((5.0 + L) / 6.0, alpha);
}

namespace {

// A step's logits [rows, V or V'] where decode_step left them (on a GPU the selection runs there and
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
  Tensor logits_;
  mutable Tensor host_;
};

}  // namespace

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Encoded {
  Tensor src, src_lengths, memory;
  std::vector<int64_t> max_length;  // per sentence, EOS included
  int64_t capacity = 0;
};

// The prefix of sentence b (empty when there are none).
const std::vector<int32_t>& prefix_of(const std::vector<std::vector<int32_t>>& prefixes, size_t b) {
  static const std::vector<int32_t> none;
  return prefixes.empty() ? none : prefixes[b];
}

Encoded encode_batch(const Transformer& model, const Context& ctx, const std::vector<std::vector<int32_t>>& sources,
                     const SearchOptions& o, const std::vector<std::vector<int32_t>>& prefixes) {
  o.validate();
  TFM_CHECK(!sources.empty(), "decoding an empty batch");
  const ModelConfig& c = model.config();
  TFM_CHECK(prefixes.empty() || prefixes.size() == sources.size(), "there are ", sources.size(), " sources but ",
            prefixes.size(), " target prefixes");
  for (size_t b = 0; b < prefixes.size(); ++b)
    for (int32_t v : prefixes[b])
      TFM_CHECK(v >= 0 && v < c.vocab_size && v != c.pad_id && v != c.bos_id && v != c.eos_id, "sentence ", b,
                ": target prefix token id ", v,
                " is not a token the output may contain (outside the vocabulary, or padding, BOS or EOS)");
  // make_batch needs targets; decoding has none, so give each sentence an empty one.
  const Batch batch = make_batch(sources, std::vector<std::vector<int32_t>>(sources.size()), c);
  Encoded e;
  e.src = batch.src;
  e.src_lengths = batch.src_lengths;
  e.memory = model.encode(ctx, batch.src, batch.src_lengths, nullptr);
  for (size_t b = 0; b < sources.size(); ++b) {
    const double limit = o.max_length_a * static_cast<double>(sources[b].size()) + o.max_length_b;
    // A prefix is output whole: one that reaches the limit is followed by EOS.
    const int64_t forced = static_cast<int64_t>(prefix_of(prefixes, b).size()) + 1;
    // Capped before the conversion (a limit past int64 would be undefined): the memory check or the
    // allocation refuses a length anywhere near it.
    const double capped = std::min(std::floor(limit), 4.0e18);
    e.max_length.push_back(std::max<int64_t>(forced, static_cast<int64_t>(capped)));
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

// With a shortlist, restricts the state's output to the batch's selection (which always holds EOS
// and the prefixes' tokens).
Columns restrict_output(const Transformer& model, const Context& ctx, DecodeState& state,
                        const std::vector<std::vector<int32_t>>& sources, const Shortlist* shortlist,
                        const std::vector<std::vector<int32_t>>& prefixes) {
  Columns cols;
  if (!shortlist) return cols;
  const ModelConfig& c = model.config();
  shortlist->check_vocabulary(c.vocab_size, "", "being decoded");
  std::vector<int32_t> always = {c.eos_id};
  for (const auto& p : prefixes) always.insert(always.end(), p.begin(), p.end());
  cols.token = shortlist->select(sources, always);
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
// the minimum length; as columns of the logits.
std::vector<int32_t> banned_columns(const Columns& cols, const ModelConfig& c, int64_t t, const SearchOptions& o) {
  std::vector<int32_t> banned;
  for (int32_t id : {c.pad_id, c.bos_id, t + 1 < o.min_length ? c.eos_id : -1})
    if (id >= 0 && cols.column_of(id) >= 0) banned.push_back(cols.column_of(id));
  return banned;
}

TopK select(const Tensor& logits, const Columns& cols, int64_t k, const ModelConfig& c, int64_t t,
            const SearchOptions& o) {
  const std::vector<int32_t> banned = banned_columns(cols, c, t, o);
  const int64_t R = logits.size(0);
  const Device d = logits.device();
  TopK top{Tensor::empty({R, k}, DType::F64, d), Tensor::empty({R, k}, DType::I32, d),
           Tensor::empty({R}, DType::F64, d)};
  ops::top_k_logprobs(logits, k, banned, top.logp, top.ids, top.lse);
  if (d != Device::CPU) top = {top.logp.to_host(), top.ids.to_host(), top.lse.to_host()};
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
Hypothesis backtrack(const std::vector<StepRecord>& steps, int64_t step, int32_t row, double score,
                     const SearchOptions& o, int64_t src_len, int64_t heads) {
  const bool with_attention = o.record_attention;
  Hypothesis h;
  h.score = score;
  const int64_t length = step + 1;  // tokens including EOS
  h.normalized = score / length_penalty(length, o.length_penalty, o.length_normalization);
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
        const Tensor af = a.dtype() == DType::F32 ? a.to_host() : a.to_host().to(DType::F32);
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

RngStream sampling_stream(uint64_t seed, const std::vector<int32_t>& source, const std::vector<int32_t>& prefix) {
  std::string bytes;
  bytes.reserve(4 * (source.size() + prefix.size() + 1));
  auto put = [&](int32_t v) {
    const auto u = static_cast<uint32_t>(v);
    for (int shift = 0; shift < 32; shift += 8) bytes.push_back(static_cast<char>((u >> shift) & 0xFF));
  };
  for (int32_t v : source) put(v);
  put(-1);
  for (int32_t v : prefix) put(v);
  return RngStream{seed, checksum_of(bytes)};
}

template <typename T>
int32_t sample_column(const T* z, int64_t n, const std::vector<uint8_t>& banned, const SearchOptions& o, double u,
                      SampleScratch& scratch) {
  // The allowed columns with their logits; the masses exp((z − max) / temperature) are the tempered
  // softmax's numerators, computed where needed (ranking by logit ranks by mass).
  auto& cand = scratch.candidates;
  cand.clear();
  double zmax = kNegInf;
  for (int64_t j = 0; j < n; ++j) {
    const double v = static_cast<double>(z[j]);
    if (banned[static_cast<size_t>(j)] || std::isnan(v)) continue;
    cand.emplace_back(v, static_cast<int32_t>(j));
    zmax = std::max(zmax, v);
  }
  if (cand.empty()) return -1;
  if (!std::isfinite(zmax)) {  // no finite logit to scale by: the best column, lower first
    for (const auto& c : cand)
      if (c.first == zmax) return c.second;
  }
  const double temperature = o.sampling_temperature;
  auto mass = [&](double v) { return std::exp((v - zmax) / temperature); };
  auto before = [](const std::pair<double, int32_t>& a, const std::pair<double, int32_t>& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  const auto m = static_cast<int64_t>(cand.size());
  const int64_t k = o.sampling_topk < 0 || o.sampling_topk >= m ? m : o.sampling_topk;
  const double p = o.sampling_topp;
  size_t sorted = 0;  // cand[0, sorted) holds the best columns, best first
  if (k < m) {        // top-k: the k best, best first
    std::partial_sort(cand.begin(), cand.begin() + k, cand.end(), before);
    cand.resize(static_cast<size_t>(k));
    sorted = static_cast<size_t>(k);
  }
  double total = 0;
  for (const auto& c : cand) total += mass(c.first);
  size_t keep = cand.size();
  if (p < 1) {  // top-p: the shortest run of best columns whose mass reaches p · total
    const double need = p * total;
    double acc = 0;
    size_t i = 0;
    for (;; ++i) {
      if (i == sorted) {  // sort further, by doubling, as far as the run needs
        const size_t next = std::min(cand.size(), std::max<size_t>(64, 2 * sorted));
        std::partial_sort(cand.begin() + static_cast<std::ptrdiff_t>(sorted),
                          cand.begin() + static_cast<std::ptrdiff_t>(next), cand.end(), before);
        sorted = next;
      }
      acc += mass(cand[i].first);
      if (acc >= need || i + 1 == cand.size()) break;
    }
    keep = i + 1;
    total = acc;
  }
  // The inverse of the cumulative distribution of cand[0, keep), renormalized, at u.
  const double target = u * total;
  double acc = 0;
  int32_t last = cand[0].second;
  for (size_t i = 0; i < keep; ++i) {
    const double w = mass(cand[i].first);
    acc += w;
    if (w > 0) last = cand[i].second;
    if (acc > target) return cand[i].second;
  }
  return last;  // u · total rounded up to the total: the last column that has mass
}
template int32_t sample_column<float>(const float*, int64_t, const std::vector<uint8_t>&, const SearchOptions&, double,
                                      SampleScratch&);
template int32_t sample_column<double>(const double*, int64_t, const std::vector<uint8_t>&, const SearchOptions&,
                                       double, SampleScratch&);

std::vector<Hypothesis> greedy_search(const Transformer& model, const std::vector<std::vector<int32_t>>& sources,
                                      const SearchOptions& o, const Shortlist* shortlist,
                                      const std::vector<std::vector<int32_t>>& prefixes) {
  const Context ctx = model.context();
  const ModelConfig& c = model.config();
  Encoded e = encode_batch(model, ctx, sources, o, prefixes);
  DecodeState state = model.start_decoding(ctx, e.memory, e.src_lengths, e.capacity, o.record_attention);
  const Columns cols = restrict_output(model, ctx, state, sources, shortlist, prefixes);
  const int64_t B = static_cast<int64_t>(sources.size());
  // Sampling with top-k 1 is greedy search.
  const bool sampling = o.sampling() && o.sampling_topk != 1;
  std::vector<RngStream> streams;
  if (sampling)
    for (int64_t b = 0; b < B; ++b) streams.push_back(sampling_stream(o.seed, sources[b], prefix_of(prefixes, b)));
  std::vector<Hypothesis> out(static_cast<size_t>(B));
  std::vector<int32_t> rows(B), parent(B), token(B, c.bos_id);  // row → sentence
  for (int64_t b = 0; b < B; ++b) rows[b] = parent[b] = static_cast<int32_t>(b);
  std::vector<double> score(B, 0.0);
  std::vector<StepRecord> steps;
  std::vector<uint8_t> banned;
  // Without scores, each step's choice may come from the int8 screen of the output projection
  // (Transformer::screened_argmax): the same tokens, without the float32 logits.
  const bool screen = !o.return_scores && !sampling && model.screens_output();
  std::vector<int32_t> screened;
  for (int64_t t = 0; !rows.empty(); ++t) {
    const Tensor hidden = model.decode_hidden(ctx, state, Tensor::from<int32_t>({int64_t(rows.size())}, token));
    const bool chosen = screen && model.screened_argmax(ctx, state, hidden, banned_columns(cols, c, t, o), screened);
    const StepLogits logits(chosen ? Tensor() : model.project_step(ctx, state, hidden));
    const TopK top = chosen ? TopK{} : select(*logits, cols, 1, c, t, o);
    // The best allowed token of row r (−1: none allowed).
    auto best_of = [&](int64_t r) { return chosen ? screened[static_cast<size_t>(r)] : top.id(r, 0); };
    steps.push_back(record_of(parent, token, state));
    const auto R = static_cast<int64_t>(rows.size());
    const int64_t n = chosen ? 0 : (*logits).size(1);
    const Tensor* const sampled = sampling ? &logits.host() : nullptr;  // copied before the rows run in parallel
    if (sampling) {
      banned.assign(static_cast<size_t>(n), 0);
      for (int32_t j : banned_columns(cols, c, t, o)) banned[static_cast<size_t>(j)] = 1;
    }
    // Each row's next token: its prefix's while there is one; EOS at the maximum length (or with
    // nothing else allowed); else the most probable, or a drawn one. −1: the most probable.
    std::vector<int32_t> choice(static_cast<size_t>(R), -1);
    auto choose = [&](int64_t r, SampleScratch& scratch) {
      const int64_t b = rows[r];
      const std::vector<int32_t>& prefix = prefix_of(prefixes, static_cast<size_t>(b));
      if (t < static_cast<int64_t>(prefix.size())) {
        choice[r] = prefix[t];
      } else if (t + 1 >= e.max_length[b] || best_of(r) < 0) {
        choice[r] = c.eos_id;
      } else if (sampling) {
        const double u = streams[b].uniform_double(static_cast<uint64_t>(t));
        const Tensor& z = *sampled;
        const int32_t col = z.dtype() == DType::F64 ? sample_column(z.data<double>() + r * n, n, banned, o, u, scratch)
                                                    : sample_column(z.data<float>() + r * n, n, banned, o, u, scratch);
        choice[r] = cols.token_of(col);  // a column is allowed: top.id(r, 0) is one
      }
    };
    if (sampling && R > 1) {  // a pass over each row's logits: rows in parallel, each its own draw
#pragma omp parallel
      {
        SampleScratch scratch;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < R; ++r) choose(r, scratch);
      }
    } else {
      SampleScratch scratch;
      for (int64_t r = 0; r < R; ++r) choose(r, scratch);
    }
    std::vector<int32_t> keep, next_rows, next_token;
    std::vector<double> next_score;
    for (size_t r = 0; r < rows.size(); ++r) {
      const int64_t b = rows[r];
      const int64_t ri = static_cast<int64_t>(r);
      const int32_t best = choice[r] >= 0 ? choice[r] : best_of(ri);
      // Without scores NaN throughout, whichever way each step chose.
      const double s = !o.return_scores ? std::numeric_limits<double>::quiet_NaN()
                       : choice[r] >= 0 ? score[r] + (logit_at(logits.host(), cols, ri, best) - top.lse.data<double>()[ri])
                                        : score[r] + top.at(ri, 0);
      if (best == c.eos_id) {
        out[b] = backtrack(steps, t, static_cast<int32_t>(r), s, o,
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
                                                 const SearchOptions& o, const Shortlist* shortlist,
                                                 const std::vector<std::vector<int32_t>>& prefixes) {
  o.validate();
  if (o.sampling()) {  // beam size 1 (validate): one drawn hypothesis per sentence
    std::vector<std::vector<Hypothesis>> out;
    for (Hypothesis& h : greedy_search(model, sources, o, shortlist, prefixes)) out.push_back({std::move(h)});
    return out;
  }
  const Context ctx = model.context();
  const ModelConfig& c = model.config();
  const int64_t K = o.beam_size, B = static_cast<int64_t>(sources.size());
  const bool no_better_live = o.beam_stop == SearchOptions::BeamStop::kNoBetterLive;
  Encoded e = encode_batch(model, ctx, sources, o, prefixes);
  DecodeState state = model.start_decoding(ctx, e.memory, e.src_lengths, e.capacity, o.record_attention, K);
  const Columns cols = restrict_output(model, ctx, state, sources, shortlist, prefixes);
  auto forced = [&](int64_t b, int64_t t) { return t < static_cast<int64_t>(prefix_of(prefixes, b).size()); };

  // Rows are grouped by sentence, `width` per active sentence: one while every active sentence is
  // still in its prefix (every beam would start from the same tokens, so one row per sentence is
  // computed and then expanded), then K. A sentence in its prefix has one live row among K.
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
    const StepLogits logits(model.decode_step(ctx, state, Tensor::from<int32_t>({int64_t(token.size())}, token)));
    // Each row's best 2K continuations: enough for the sentence's best 2K overall.
    const TopK top = select(*logits, cols, 2 * K, c, t, o);
    steps.push_back(record_of(parent, token, state));
    std::vector<int32_t> next_active, next_parent, next_token;
    std::vector<double> next_score;
    bool all_forced_next = true;  // every sentence still in its prefix at the next step: stay one row wide
    for (const int32_t b : active) all_forced_next = all_forced_next && forced(b, t + 1);
    const int64_t next_width = all_forced_next ? 1 : K;
    for (size_t i = 0; i < active.size(); ++i) {
      const int64_t b = active[i];
      const bool last = t + 1 >= e.max_length[b];  // only EOS may follow
      cands.clear();
      for (int64_t k = 0; k < width; ++k) {
        const int32_t r = static_cast<int32_t>(i * width + k);
        if (score[r] == kNegInf) continue;
        if (forced(b, t)) {  // the prefix's token (never at the maximum length: encode_batch)
          const int32_t y = prefix_of(prefixes, static_cast<size_t>(b))[static_cast<size_t>(t)];
          cands.push_back({score[r] + logit_at(logits.host(), cols, r, y) - top.lse.data<double>()[r], r, y});
          continue;
        }
        // At the maximum length, or with no token allowed at all (a shortlist whose selection is
        // banned, e.g. only EOS before the minimum length), only EOS may follow, as in greedy search.
        if (last || top.id(r, 0) < 0) {
          cands.push_back({score[r] + logit_at(logits.host(), cols, r, c.eos_id) - top.lse.data<double>()[r], r, c.eos_id});
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
          if (rank < static_cast<size_t>(K) || last) {
            Hypothesis h = backtrack(steps, t, cand.row, cand.score, o, e.src_lengths.data<int32_t>()[b], c.heads);
            if (!no_better_live || static_cast<int64_t>(done.size()) < K) {
              done.push_back(std::move(h));
            } else {  // the beam_size best are kept: it replaces the worst if it is better
              auto worst = std::min_element(done.begin(), done.end(), [](const Hypothesis& x, const Hypothesis& y) {
                return x.normalized < y.normalized;
              });
              if (h.normalized > worst->normalized) *worst = std::move(h);
            }
          }
        } else if (static_cast<int64_t>(live.size()) < K) {
          live.push_back(cand);
        }
      }
      std::sort(done.begin(), done.end(), [](const Hypothesis& x, const Hypothesis& y) { return x.normalized > y.normalized; });
      // Done when K hypotheses have ended, or when none of the live ones can beat the n-th best
      // ended one: a live score can only fall, and the length penalty is largest at the maximum
      // length, so score / max lp bounds what it can reach.
      const auto ended = static_cast<int64_t>(done.size());
      bool stop = last || live.empty();
      if (!stop && no_better_live) {
        // The best live one's score at its current length (t + 1 tokens, no end yet), as Hugging Face.
        stop = ended >= K &&
               live[0].score / length_penalty(t + 1, o.length_penalty, o.length_normalization) <= done.back().normalized;
      } else if (!stop) {
        stop = ended >= K;
        if (!stop && ended >= o.n_best) {
          const double lp_max = std::max(length_penalty(t + 2, o.length_penalty, o.length_normalization),
                                         length_penalty(e.max_length[b], o.length_penalty, o.length_normalization));
          double bound = kNegInf;
          for (const Candidate& l : live) bound = std::max(bound, l.score <= 0 ? l.score / lp_max : l.score);
          stop = done[o.n_best - 1].normalized >= bound;
        }
      }
      if (stop) continue;
      next_active.push_back(static_cast<int32_t>(b));
      for (int64_t k = 0; k < next_width; ++k) {
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
    width = next_width;
    active = next_active;
    parent = next_parent;
    token = next_token;
    score = next_score;
  }
  for (auto& done : finished) {
    TFM_CHECK(!done.empty(), "beam search ended a sentence without a hypothesis");
    if (static_cast<int64_t>(done.size()) > o.n_best) done.resize(static_cast<size_t>(o.n_best));
    if (!o.return_scores)  // ranked by them, but not returned: as greedy search's
      for (Hypothesis& h : done) h.score = h.normalized = std::numeric_limits<double>::quiet_NaN();
  }
  return finished;
}

}  // namespace tfm
