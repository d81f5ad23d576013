// A JSON request read into the library's options and inputs: the body's fields by type and range,
// the translate options with SearchOptions' defaults, and the texts cleaned, checked and encoded.
#include "serve/request.h"

#include <algorithm>

#include "core/error.h"
#include "serve/http_error.h"
#include "transformer/text.h"

namespace tfm::serve {

using json = nlohmann::json;

Fields::Fields(const std::string& body, std::initializer_list<const char*> known) {
  // No request needs nesting deeper than 3; deeper is refused while parsing (a body of 100,000
  // '[' inside a field once crashed the error message's dump() by recursion).
  static constexpr int kMaxDepth = 16;
  try {
    body_ = json::parse(body, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) throw HttpError{400, cat("the request body nests deeper than ", kMaxDepth, " levels")};
      return true;
    });
  } catch (const json::exception& e) {  // parse errors, and numbers out of range (1e400)
    throw HttpError{400, cat("the request body is not valid JSON: ", e.what())};
  }
  if (!body_.is_object())
    throw HttpError{400, cat("the request body must be a JSON object, got ", body_.type_name())};
  for (const auto& [name, value] : body_.items())
    if (std::find_if(known.begin(), known.end(), [&](const char* k) { return name == k; }) == known.end()) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw HttpError{400, cat("unknown field '", name.size() > 80 ? name.substr(0, 77) + "..." : name, "' (known: ", list, ")")};
    }
}

std::string Fields::describe(const json& v) {
  if (v.is_structured()) return v.type_name();
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

int64_t Fields::integer(const char* name, int64_t fallback, int64_t lo, int64_t hi, const char* why) const {
  if (!has(name)) return fallback;
  const json& v = body_[name];
  if (!v.is_number_integer())
    throw HttpError{400, cat("'", name, "' must be an integer, got ", describe(v))};
  const auto n = v.get<int64_t>();
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    throw HttpError{400, cat("'", name, "' must be in [", lo, ", ", hi, "]", why, ", got ", describe(v))};
  if (n < lo || n > hi) throw HttpError{400, cat("'", name, "' must be in [", lo, ", ", hi, "]", why, ", got ", n)};
  return n;
}

double Fields::number(const char* name, double fallback, double lo, double hi) const {
  if (!has(name)) return fallback;
  const json& v = body_[name];
  if (!v.is_number()) throw HttpError{400, cat("'", name, "' must be a number, got ", describe(v))};
  const auto x = v.get<double>();
  if (!(x >= lo && x <= hi)) throw HttpError{400, cat("'", name, "' must be in [", lo, ", ", hi, "], got ", x)};
  return x;
}

bool Fields::boolean(const char* name, bool fallback) const {
  if (!has(name)) return fallback;
  const json& v = body_[name];
  if (!v.is_boolean()) throw HttpError{400, cat("'", name, "' must be true or false, got ", describe(v))};
  return v.get<bool>();
}

std::string Fields::string(const char* name) const {
  if (!has(name)) return "";
  const json& v = body_[name];
  if (!v.is_string()) throw HttpError{400, cat("'", name, "' must be a string, got ", describe(v))};
  return v.get<std::string>();
}

std::vector<std::string> Fields::texts(const char* name, int64_t max_sentences) const {
  if (!has(name)) throw HttpError{400, cat("the field '", name, "' is missing: give a list of texts")};
  const json& v = body_[name];
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array())
    throw HttpError{400, cat("'", name, "' must be a string or a list of strings, got ", v.type_name())};
  if (v.empty()) throw HttpError{400, cat("'", name, "' is an empty list: give at least one text")};
  if (static_cast<int64_t>(v.size()) > max_sentences)
    throw HttpError{400, cat("'", name, "' has ", v.size(), " texts, more than the limit of ", max_sentences,
                             " per request (--max-sentences): send them in several requests")};
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw HttpError{400, cat("'", name, "[", i, "]' must be a string, got ", v[i].type_name())};
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

TranslateRequest translate_request(const Fields& f, const ServerOptions& limits) {
  const transformer::SearchOptions defaults;
  constexpr double kMaxLengthPenalty = 10;
  TranslateRequest r;
  transformer::SearchOptions& s = r.options.search;
  // n_best without a beam widens the default beam to it; with one, it may not be more.
  const int64_t n_best = f.integer("n_best", defaults.n_best, 1, limits.max_beam, " (--max-beam)");
  s.beam_size = f.integer("beam", std::max<int64_t>(std::min<int64_t>(defaults.beam_size, limits.max_beam), n_best), 1,
                          limits.max_beam, " (--max-beam)");
  s.n_best = f.integer("n_best", defaults.n_best, 1, s.beam_size, " (at most the beam)");
  s.length_penalty = f.number("length_penalty", defaults.length_penalty, 0, kMaxLengthPenalty);
  s.record_attention = f.boolean("attention", defaults.record_attention);
  r.options.max_input_tokens = limits.max_input_tokens;
  r.options.languages = {f.string("source_lang"), f.string("target_lang")};
  r.scores = f.boolean("scores", false);
  // Computed only where returned: greedy search is faster without (SearchOptions::return_scores).
  s.return_scores = r.scores || s.n_best > 1 || s.record_attention;
  return r;
}

std::string clean_text(const std::string& text, const TextRule& rule, int64_t max_text_length,
                       std::vector<std::string>& warnings) {
  const auto characters = std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; });
  if (characters > max_text_length)
    throw HttpError{400, cat(rule.what, " has ", characters, " characters, more than the limit of ", max_text_length,
                             " (--max-text-length)")};
  transformer::CleanText c = transformer::clean_input(text);
  for (const std::string& w : transformer::repair_warnings(c.repairs, rule.what)) warnings.push_back(w);
  if (c.text.empty() && !rule.may_be_empty)
    throw HttpError{400, cat(rule.what, " is empty (nothing to translate once trimmed)")};
  return std::move(c.text);
}

namespace {

// A text cleaned, checked and encoded; one the vocabulary turns into no tokens at all (only
// zero-width or ideographic spaces, say) is refused like an empty one. A target to score may be
// empty, as with `transformer score`: its score is the end of sentence's.
// A text to translate gets a multilingual model's source-language token first (`languages`).
std::vector<int32_t> encode(const LoadedModel& m, const std::string& text, const TextRule& rule,
                            int64_t max_text_length, std::vector<std::string>& warnings,
                            const transformer::LanguageOptions* languages = nullptr) {
  const std::string clean = clean_text(text, rule, max_text_length, warnings);
  std::vector<int32_t> ids;
  try {
    ids = languages ? m.translator->encode_source(clean, *languages) : m.translator->encode(clean);
  } catch (const Error& e) {  // a language the model does not have, or none given to one that needs it
    throw HttpError{400, e.what()};
  }
  if (ids.empty() && !rule.may_be_empty)
    throw HttpError{400, cat(rule.what, " has no tokens: the vocabulary drops every character of it")};
  return ids;
}

}  // namespace

TranslateInputs translate_inputs(const LoadedModel& m, const std::vector<std::string>& texts,
                                 const transformer::TranslateOptions& o, const ServerOptions& limits) {
  TranslateInputs in;
  in.warnings.resize(texts.size());
  int64_t attention_values = 0;  // at most, were every output as long as allowed
  for (size_t i = 0; i < texts.size(); ++i) {
    in.sources.push_back(
        encode(m, texts[i], {cat("text[", i, "]")}, limits.max_text_length, in.warnings[i], &o.languages));
    const int64_t length = std::min<int64_t>(static_cast<int64_t>(in.sources.back().size()), limits.max_input_tokens);
    in.costs.push_back(length + 1);
    const auto max_output = static_cast<int64_t>(o.search.max_length_a * static_cast<double>(length) + o.search.max_length_b);
    attention_values += o.search.n_best * m.decoder_layers * m.heads * (length + 1) * (max_output + 1);
  }
  if (o.search.record_attention && attention_values > limits.max_attention_values)
    throw HttpError{400, cat("the attention of this request could be ", attention_values,
                             " weights (texts × n_best × layers × heads × source × output tokens), more than the limit of ",
                             limits.max_attention_values,
                             " (--max-attention-values): ask for attention with fewer or shorter texts, or a smaller n_best")};
  return in;
}

ScoreInputs score_inputs(const LoadedModel& m, const Fields& f, const ServerOptions& limits) {
  const std::vector<std::string> src_texts = f.texts("source", limits.max_sentences);
  const std::vector<std::string> tgt_texts = f.texts("target", limits.max_sentences);
  if (src_texts.size() != tgt_texts.size())
    throw HttpError{400, cat("'source' has ", src_texts.size(), " texts but 'target' has ", tgt_texts.size(),
                             ": give one target per source")};
  ScoreInputs in;
  in.warnings.resize(src_texts.size());
  for (size_t i = 0; i < src_texts.size(); ++i) {
    in.sources.push_back(encode(m, src_texts[i], {cat("source[", i, "]")}, limits.max_text_length, in.warnings[i]));
    in.targets.push_back(encode(m, tgt_texts[i], {cat("target[", i, "]"), true}, limits.max_text_length, in.warnings[i]));
    in.costs.push_back(std::min<int64_t>(static_cast<int64_t>(in.sources.back().size()), limits.max_input_tokens) +
                       std::min<int64_t>(static_cast<int64_t>(in.targets.back().size()), limits.max_input_tokens) + 2);
  }
  return in;
}

EmbedInputs embed_inputs(const transformer::Encoder& encoder, const std::vector<std::string>& texts,
                         const ServerOptions& limits) {
  EmbedInputs in;
  in.warnings.resize(texts.size());
  const size_t specials = encoder.encode("").size();
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string what = cat("texts[", i, "]");
    const std::string text = clean_text(texts[i], {what, true}, limits.max_text_length, in.warnings[i]);
    if (text.empty()) throw HttpError{400, cat(what, " is empty (nothing to embed once trimmed)")};
    in.ids.push_back(encoder.encode(text));
    if (in.ids.back().size() == specials)
      throw HttpError{400, cat(what, " has no tokens: the vocabulary drops every character of it")};
    const auto tokens = static_cast<int64_t>(in.ids.back().size());
    if (tokens > limits.max_input_tokens)
      throw HttpError{400, cat(what, " has ", tokens, " tokens (specials included), more than the limit of ",
                               limits.max_input_tokens, " (--max-input-tokens)")};
    in.costs.push_back(tokens);
    in.any_warning = in.any_warning || !in.warnings[i].empty();
  }
  return in;
}

}  // namespace tfm::serve
