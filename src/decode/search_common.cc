// What greedy and beam search share: encoding the batch, the output's columns, each step's top k,
// the step records and the backtracking through them, and the length penalty.
#include "decode/search_common.h"

#include <algorithm>
#include <cmath>

#include "ops/top_k.h"

namespace tfm {

double length_penalty(int64_t length, double alpha, SearchOptions::LengthNormalization form) {
  const double L = static_cast<double>(length);
  return form == SearchOptions::LengthNormalization::kPower ? std::pow(L, alpha) : std::pow((5.0 + L) / 6.0, alpha);
}

namespace search {

const std::vector<int32_t>& prefix_of(const Sentences& prefixes, size_t b) {
  static const std::vector<int32_t> none;
  return prefixes.empty() ? none : prefixes[b];
}

namespace {

void check_prefixes(const ModelConfig& c, const Sentences& sources, const Sentences& prefixes) {
  TFM_CHECK(prefixes.empty() || prefixes.size() == sources.size(), "there are ", sources.size(), " sources but ",
            prefixes.size(), " target prefixes");
  for (size_t b = 0; b < prefixes.size(); ++b)
    for (int32_t v : prefixes[b])
      TFM_CHECK(v >= 0 && v < c.vocab_size && v != c.pad_id && v != c.bos_id && !ends_hypothesis(c, v), "sentence ",
                b, ": target prefix token id ", v,
                " is not a token the output may contain (outside the vocabulary, or padding, BOS, EOS or a stop id)");
}

// Each sentence's output length limit (EOS included) and the largest.
void set_max_lengths(std::vector<int64_t>& max_length, int64_t& capacity, const Sentences& sources,
                     const SearchOptions& o, const Sentences& prefixes) {
  for (size_t b = 0; b < sources.size(); ++b) {
    const double limit = o.max_length_a * static_cast<double>(sources[b].size()) + o.max_length_b;
    // A prefix is output whole: one that reaches the limit is followed by EOS.
    const int64_t forced = static_cast<int64_t>(prefix_of(prefixes, b).size()) + 1;
    // Capped before the conversion (a limit past int64 would be undefined): the memory check or the
    // allocation refuses a length anywhere near it.
    const double capped = std::min(std::floor(limit), 4.0e18);
    max_length.push_back(std::max<int64_t>(forced, static_cast<int64_t>(capped)));
    capacity = std::max(capacity, max_length.back());
  }
}

// Copies the recorded attention of the rows in `chain` (the hypothesis's row at each step) into
// out [decoder layers, H, length, src_len].
void copy_attention(const std::vector<StepRecord>& steps, const std::vector<int32_t>& chain, int64_t heads,
                    int64_t src_len, Tensor& out) {
  const int64_t layers = out.size(0), length = out.size(2);
  float* dst = out.data<float>();
  for (int64_t t = 0; t < length; ++t)
    for (int64_t l = 0; l < layers; ++l) {
      const Tensor& a = steps[t].attention[l];  // [R, H, 1, S]
      const Tensor af = a.dtype() == DType::F32 ? a.to_host() : a.to_host().to(DType::F32);  // [R, H, 1, S]
      const int64_t s_batch = a.size(3);
      const float* src = af.data<float>() + chain[t] * heads * s_batch;
      for (int64_t hd = 0; hd < heads; ++hd)
        for (int64_t s = 0; s < src_len; ++s)
          dst[((l * heads + hd) * length + t) * src_len + s] = src[hd * s_batch + s];
    }
}

}  // namespace

Start start_translation(const Transformer& model, const Context& ctx, const Sentences& sources, const SearchOptions& o,
                        const Sentences& prefixes, int64_t hypotheses) {
  o.validate();
  TFM_CHECK(!sources.empty(), "decoding an empty batch");
  const ModelConfig& c = model.config();
  check_prefixes(c, sources, prefixes);
  // make_batch needs targets; decoding has none, so give each sentence an empty one.
  const Batch batch = make_batch(sources, Sentences(sources.size()), c);
  Start s;
  s.src_lengths = batch.src_lengths;
  const Tensor memory = model.encode(ctx, batch.src, batch.src_lengths, nullptr);  // [B, S, D]
  int64_t capacity = 0;  // the largest max_length: the decoding cache's length
  set_max_lengths(s.max_length, capacity, sources, o, prefixes);
  s.state = model.start_decoding(ctx, memory, batch.src_lengths, capacity, o.record_attention, hypotheses);
  s.first.assign(sources.size(), c.bos_id);
  return s;
}

Columns restrict_output(const Transformer& model, const Context& ctx, DecodeState& state, const Sentences& sources,
                        const Shortlist* shortlist, const Sentences& prefixes) {
  Columns cols;
  if (!shortlist) return cols;
  const ModelConfig& c = model.config();
  shortlist->check_vocabulary(c.vocab_size, "", "being decoded");
  std::vector<int32_t> always = {c.eos_id};
  always.insert(always.end(), c.stop_ids.begin(), c.stop_ids.end());
  for (const auto& p : prefixes) always.insert(always.end(), p.begin(), p.end());
  cols.token = shortlist->select(sources, always);
  model.restrict_output(ctx, state, cols.token);
  cols.column.assign(static_cast<size_t>(c.vocab_size), -1);
  for (size_t j = 0; j < cols.token.size(); ++j) cols.column[cols.token[j]] = static_cast<int32_t>(j);
  return cols;
}

double logit_at(const Tensor& logits, const Columns& cols, int64_t r, int32_t v) {
  const int64_t V = logits.size(1), j = cols.column_of(v);
  return logits.dtype() == DType::F64 ? logits.data<double>()[r * V + j] : logits.data<float>()[r * V + j];
}

bool ends_hypothesis(const ModelConfig& c, int32_t token) {
  return token == c.eos_id || std::find(c.stop_ids.begin(), c.stop_ids.end(), token) != c.stop_ids.end();
}

std::vector<int32_t> banned_columns(const Columns& cols, const ModelConfig& c, int64_t t, const SearchOptions& o) {
  std::vector<int32_t> banned;
  auto ban = [&](int32_t id) {
    if (id >= 0 && cols.column_of(id) >= 0) banned.push_back(cols.column_of(id));
  };
  // A decoder that starts from end of sentence (bos_id = eos_id) may still end with it.
  for (int32_t id : {c.pad_id, c.bos_id == c.eos_id ? -1 : c.bos_id}) ban(id);
  if (t + 1 < o.min_length) {  // nothing ends a hypothesis before its minimum length
    ban(c.eos_id);
    for (int32_t id : c.stop_ids) ban(id);
  }
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

StepRecord record_of(const std::vector<int32_t>& parent, const std::vector<int32_t>& token, const DecodeState& state) {
  StepRecord r{parent, token, {}};
  if (state.record_attention) r.attention = state.cross_attention;
  return r;
}

Hypothesis backtrack(const std::vector<StepRecord>& steps, int64_t step, int32_t row, double score,
                     const SearchOptions& o, int64_t src_len, int64_t heads) {
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
  if (o.record_attention) {
    const auto layers = static_cast<int64_t>(steps[0].attention.size());
    h.attention = Tensor::zeros({layers, heads, length, src_len});  // [decoder layers, H, T, S]
    copy_attention(steps, chain, heads, src_len, h.attention);
  }
  return h;
}

}  // namespace search
}  // namespace tfm
