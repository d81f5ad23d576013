// Generation with decoder-only models (generate_search): the prompts grouped by length, each group
// started from its prompts (all but their last token fed into the cache) and searched as
// translation is, by the same greedy, beam and sampling searches.
#include <map>

#include "decode/search_common.h"

namespace tfm {
namespace search {
namespace {

void check_prompts(const ModelConfig& c, const Sentences& prompts, int64_t max_new, int64_t min_new) {
  TFM_CHECK(c.architecture == "decoder-only", "generation needs a decoder-only model; this one is ", c.architecture,
            " (translate with it instead)");
  TFM_CHECK(max_new >= 0, "max_new_tokens must be >= 0, got ", max_new);
  TFM_CHECK(min_new >= 0 && min_new <= max_new, "min_new_tokens must be in [0, max_new_tokens ", max_new, "], got ",
            min_new);
  for (size_t b = 0; b < prompts.size(); ++b) {
    TFM_CHECK(!prompts[b].empty(), "prompt ", b, " is empty: generation needs at least one token",
              c.bos_id >= 0 ? cat(" (BOS, id ", c.bos_id, ", to start from nothing)") : std::string());
    for (int32_t v : prompts[b])
      TFM_CHECK(v >= 0 && v < c.vocab_size, "prompt ", b, ": token id ", v, " is outside the vocabulary [0, ",
                c.vocab_size, ")");
  }
}

}  // namespace

Start start_generation(const Transformer& model, const Context& ctx, const Sentences& prompts, int64_t max_new,
                       int64_t hypotheses) {
  const auto B = static_cast<int64_t>(prompts.size());
  const auto P = static_cast<int64_t>(prompts[0].size());
  Start s;
  s.src_lengths = Tensor::zeros({B}, DType::I32);
  // max_new tokens, the last of them ending the continuation (limit_without_eos); none: only EOS.
  s.max_length.assign(static_cast<size_t>(B), max_new > 0 ? max_new : 1);
  s.state = model.start_decoding(ctx, B, P + max_new, hypotheses);
  if (P > 1) {
    std::vector<int32_t> head;  // [B, P − 1]
    for (const auto& p : prompts) head.insert(head.end(), p.begin(), p.end() - 1);
    model.decode_prefix(ctx, s.state, Tensor::from<int32_t>({B, P - 1}, head));
  }
  for (const auto& p : prompts) s.first.push_back(p.back());
  return s;
}

namespace {

// One group of prompts of the same length: its n-best lists, in the group's order.
std::vector<std::vector<Hypothesis>> generate_group(const Transformer& model, const Sentences& prompts,
                                                    const SearchOptions& o, int64_t max_new,
                                                    const TokenCallback& on_token) {
  const int64_t hypotheses = o.sampling() ? 1 : o.beam_size;
  Start start = start_generation(model, model.context(), prompts, max_new, hypotheses);
  start.on_token = on_token;
  if (o.sampling() || o.beam_size == 1) {
    std::vector<std::vector<Hypothesis>> out;
    for (Hypothesis& h : greedy_from(model, std::move(start), prompts, o)) out.push_back({std::move(h)});
    return out;
  }
  return beam_from(model, std::move(start), prompts, o);
}

}  // namespace
}  // namespace search

std::vector<std::vector<Hypothesis>> generate_search(const Transformer& model, const search::Sentences& prompts,
                                                     const SearchOptions& options, int64_t max_new_tokens,
                                                     int64_t min_new_tokens, const TokenCallback& on_token) {
  options.validate();
  search::check_prompts(model.config(), prompts, max_new_tokens, min_new_tokens);
  TFM_CHECK(!options.record_attention, "generation records no attention: a ", model.config().architecture,
            " model has no encoder-decoder attention");
  TFM_CHECK(!on_token || options.beam_size == 1, "streaming tokens needs greedy search or sampling (beam size 1), got "
            "beam size ", options.beam_size);
  SearchOptions o = options;
  o.min_length = min_new_tokens + 1;  // min_length counts the end of sentence
  // As Hugging Face's generate() stops at max_new_tokens: a continuation that reaches the limit ends
  // with its last token, scored and length-normalized without an end of sentence after it.
  o.limit_without_eos = max_new_tokens > 0;
  std::map<size_t, std::vector<size_t>> by_length;  // prompt length → the prompts' indices
  for (size_t i = 0; i < prompts.size(); ++i) by_length[prompts[i].size()].push_back(i);
  std::vector<std::vector<Hypothesis>> out(prompts.size());
  for (const auto& [length, indices] : by_length) {
    search::Sentences group;
    for (size_t i : indices) group.push_back(prompts[i]);
    TokenCallback report;
    if (on_token) report = [&](int64_t b, int32_t token) { on_token(static_cast<int64_t>(indices[b]), token); };
    std::vector<std::vector<Hypothesis>> done = search::generate_group(model, group, o, max_new_tokens, report);
    for (size_t j = 0; j < indices.size(); ++j) out[indices[j]] = std::move(done[j]);
  }
  return out;
}

}  // namespace tfm
