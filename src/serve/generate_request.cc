// A /v1/generate request read into GenerationOptions and encoded prompts, and its answer's JSON.
#include "serve/generate_request.h"

#include <algorithm>

#include "core/error.h"
#include "serve/http_error.h"

namespace tfm::serve {

using json = nlohmann::json;

namespace {

// The search fields, by SearchOptions' names; an absent one keeps GenerationOptions' default.
void read_search(const Fields& f, const ServerOptions& limits, transformer::SearchOptions& s) {
  constexpr double kMaxLengthPenalty = 10, kMaxTemperature = 1e6;
  s.beam_size = f.integer("beam_size", s.beam_size, 1, limits.max_beam, " (--max-beam)");
  s.n_best = f.integer("n_best", s.n_best, 1, s.beam_size, " (at most beam_size)");
  s.length_penalty = f.number("length_penalty", s.length_penalty, 0, kMaxLengthPenalty);
  s.sampling_topk = f.integer("sampling_topk", s.sampling_topk, -1, INT32_MAX, " (-1: the whole vocabulary)");
  s.sampling_topp = f.number("sampling_topp", s.sampling_topp, 0, 1);
  s.sampling_temperature = f.number("sampling_temperature", s.sampling_temperature, 0, kMaxTemperature);
  s.seed = static_cast<uint64_t>(f.integer("seed", static_cast<int64_t>(s.seed), 0, INT64_MAX));
  s.return_scores = f.boolean("return_scores", s.return_scores);
}

}  // namespace

Fields generate_fields(const std::string& body) {
  return Fields(body, {"prompts", "model", "stream", "max_new_tokens", "min_new_tokens", "include_prompt",
                       "beam_size", "n_best", "length_penalty", "sampling_topk", "sampling_topp",
                       "sampling_temperature", "seed", "return_scores"});
}

GenerateRequest generate_request(const Fields& f, const ServerOptions& limits) {
  GenerateRequest r;
  transformer::GenerationOptions& o = r.options;
  read_search(f, limits, o.search);
  o.max_new_tokens = f.integer("max_new_tokens", std::min(o.max_new_tokens, limits.max_input_tokens), 0,
                               limits.max_input_tokens, " (--max-input-tokens)");
  o.min_new_tokens = f.integer("min_new_tokens", o.min_new_tokens, 0, o.max_new_tokens, " (at most max_new_tokens)");
  o.include_prompt = f.boolean("include_prompt", o.include_prompt);
  o.max_input_tokens = limits.max_input_tokens;
  r.stream = f.boolean("stream", false);
  try {
    o.validate();
  } catch (const Error& e) {
    throw HttpError{400, cat("the options do not fit together: ", e.what())};
  }
  if (r.stream && o.search.beam_size != 1)
    throw HttpError{400, cat("'stream' sends tokens as greedy search or sampling chooses them: it needs beam_size 1, "
                             "got ", o.search.beam_size, " (a beam search knows its tokens only at the end)")};
  return r;
}

GenerateInputs generate_inputs(const transformer::Generator& g, const std::vector<std::string>& texts,
                               const transformer::GenerationOptions& o, const ServerOptions& limits,
                               int64_t positions) {
  GenerateInputs in;
  in.warnings.resize(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string what = cat("prompts[", i, "]");
    std::vector<int32_t> ids;  // BOS first, unless the model has none (bos_id −1)
    if (g.bos_id() >= 0) ids.push_back(g.bos_id());
    const std::vector<int32_t> encoded =
        g.encode(clean_text(texts[i], {what, /*may_be_empty=*/true}, limits.max_text_length, in.warnings[i]));
    ids.insert(ids.end(), encoded.begin(), encoded.end());
    if (ids.empty())
      throw HttpError{400, cat(what, " is empty, and this model puts no BOS before a prompt (bos_id -1): generation "
                               "needs at least one token to start from")};
    if (static_cast<int64_t>(ids.size()) > limits.max_input_tokens)
      throw HttpError{400, cat(what, " has ", ids.size(), " tokens with BOS, more than the limit of ",
                               limits.max_input_tokens, " (--max-input-tokens)")};
    if (positions > 0 && static_cast<int64_t>(ids.size()) + o.max_new_tokens > positions)
      throw HttpError{400, cat(what, " has ", ids.size(), " tokens with BOS: with max_new_tokens ", o.max_new_tokens,
                               " that is more than the ", positions, " positions the model has (max_positions)")};
    in.costs.push_back(static_cast<int64_t>(ids.size()) + o.max_new_tokens);
    in.prompts.push_back(std::move(ids));
  }
  return in;
}

json generation_json(const transformer::Generator& g, const transformer::Generation& r,
                     const transformer::GenerationOptions& o, const std::vector<std::string>& warnings) {
  const transformer::Hypothesis& best = r.best();
  json j = {{"text", g.decode(best.ids)}};  // the hypotheses hold ids only (generate_batch_ids)
  if (o.search.return_scores) j["score"] = best.normalized;
  if (!warnings.empty()) j["warnings"] = warnings;
  if (o.search.n_best > 1) {
    json hyps = json::array();
    for (const transformer::Hypothesis& h : r.hypotheses) {
      json hj = {{"text", g.decode(h.ids)}};
      if (o.search.return_scores) hj["score"] = h.normalized;
      hyps.push_back(std::move(hj));
    }
    j["hypotheses"] = std::move(hyps);
  }
  return j;
}

}  // namespace tfm::serve
