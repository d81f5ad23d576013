// The JSON the server answers with: errors, translations (hypotheses, scores, tokens and attention)
// and scores.
#include "serve/responses.h"

#include <cmath>

#include "serve/http_error.h"

namespace tfm::serve {

using json = nlohmann::json;

std::string error_body(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

std::vector<std::string> tokens_of(const transformer::Translator& t, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  out.reserve(ids.size() + 1);
  for (int32_t id : ids) out.push_back(t.piece(id));
  out.push_back("</s>");
  return out;
}

// Hypothesis attention [layer][head][target][source] as nested JSON arrays, rounded to 5 decimals.
json attention_json(const transformer::Attention& a) {
  json layers = json::array();
  for (int64_t l = 0; l < a.layers; ++l) {
    json heads = json::array();
    for (int64_t h = 0; h < a.heads; ++h) {
      json rows = json::array();
      for (int64_t t = 0; t < a.target_length; ++t) {
        json row = json::array();
        for (int64_t s = 0; s < a.source_length; ++s) row.push_back(std::round(a.at(l, h, t, s) * 1e5) / 1e5);
        rows.push_back(std::move(row));
      }
      heads.push_back(std::move(rows));
    }
    layers.push_back(std::move(heads));
  }
  return layers;
}

// Every hypothesis: its text and score, and with attention its tokens and weights.
json hypotheses_json(const transformer::Translator& t, const transformer::Translation& r, bool attention) {
  json hyps = json::array();
  for (const transformer::Hypothesis& h : r.hypotheses) {
    json hj = {{"text", t.decode(h.ids)}, {"score", h.normalized}};
    if (attention) {
      hj["target_tokens"] = tokens_of(t, h.ids);
      hj["attention"] = attention_json(h.attention);
    }
    hyps.push_back(std::move(hj));
  }
  return hyps;
}

}  // namespace

json translation_json(const transformer::Translator& t, const transformer::Translation& r,
                      const TranslateRequest& request, const std::vector<std::string>& warnings) {
  const transformer::SearchOptions& search = request.options.search;
  const transformer::Hypothesis& best = r.best();
  json j = {{"text", t.decode(best.ids)}};  // translate_ids gives ids only
  if (request.scores) j["score"] = best.normalized;
  if (r.truncated) j["truncated"] = true;
  if (!warnings.empty()) j["warnings"] = warnings;
  if (search.n_best > 1 || search.record_attention) j["hypotheses"] = hypotheses_json(t, r, search.record_attention);
  if (search.record_attention) j["source_tokens"] = tokens_of(t, r.source_ids);
  return j;
}

json score_json(const transformer::Score& s, const std::vector<std::string>& warnings) {
  json j = {{"score", s.total}, {"per_token", s.per_token}, {"tokens", s.tokens}};
  if (s.truncated) j["truncated"] = true;
  if (!warnings.empty()) j["warnings"] = warnings;
  return j;
}

nlohmann::json embedding_json(const transformer::Embedding& e, bool per_token) {
  auto row = [&](int64_t r) {
    return std::vector<float>(e.values.begin() + r * e.dim, e.values.begin() + (r + 1) * e.dim);
  };
  if (!per_token) return row(0);
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t r = 0; r < e.rows; ++r) rows.push_back(row(r));
  return rows;
}

}  // namespace tfm::serve
