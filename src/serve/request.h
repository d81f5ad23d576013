#pragma once
// A JSON request to the server read into what the library takes: its fields checked by type and
// range, the translate request's options (every default from transformer::SearchOptions), and its
// texts cleaned, checked and encoded. Every error is an HttpError 400 naming the field and value.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/models.h"
#include "serve/options.h"
#include "transformer/encoder.h"
#include "transformer/translator.h"

namespace tfm::serve {

// The request body's fields, checked by type and range; every error names the field and value.
class Fields {
 public:
  // Parses `body`: a JSON object whose fields are all `known`.
  Fields(const std::string& body, std::initializer_list<const char*> known);

  bool has(const char* name) const { return body_.contains(name); }  // null is a wrong type, not absence
  // A value for an error message: a scalar as JSON (cut at 80 bytes), a container by its type.
  static std::string describe(const nlohmann::json& v);
  // The field's value, or `fallback` when it is absent; `why` follows the range in its error.
  int64_t integer(const char* name, int64_t fallback, int64_t lo, int64_t hi, const char* why = "") const;
  double number(const char* name, double fallback, double lo, double hi) const;
  bool boolean(const char* name, bool fallback) const;
  std::string string(const char* name) const;  // "" when absent
  // A required list of texts (a single string counts as a list of one).
  std::vector<std::string> texts(const char* name, int64_t max_sentences) const;

 private:
  nlohmann::json body_;
};

// How a request's text is checked: its name in errors ("text[0]"), and whether it may be empty.
struct TextRule {
  std::string what;
  bool may_be_empty = false;
};

// A text checked (not over the limit, in characters as the OpenAPI document's maxLength counts
// them, before cleaning) and cleaned (transformer/text.h): not empty once trimmed, unless
// `may_be_empty`; what the cleaning repaired is added to `warnings`.
std::string clean_text(const std::string& text, const TextRule& rule, int64_t max_text_length,
                       std::vector<std::string>& warnings);

// What a /v1/translate request asks for beyond its texts.
struct TranslateRequest {
  transformer::TranslateOptions options;
  bool scores = false;  // "scores": each translation's normalized score
};

// The translate request's fields "beam", "n_best", "length_penalty", "attention" and "scores" as
// the library's options, within the server's limits; an absent field takes SearchOptions' default.
TranslateRequest translate_request(const Fields& f, const ServerOptions& limits);

// A translate request's texts encoded: the sources, each one's cost in the batcher (tokens), the
// warnings of its cleaning.
struct TranslateInputs {
  std::vector<std::vector<int32_t>> sources;
  std::vector<int64_t> costs;
  std::vector<std::vector<std::string>> warnings;
};

// Encodes `texts` ("text[i]" in errors); refuses a request for attention that could exceed
// --max-attention-values.
TranslateInputs translate_inputs(const LoadedModel& m, const std::vector<std::string>& texts,
                                 const transformer::TranslateOptions& o, const ServerOptions& limits);

// A score request's pairs encoded: sources, targets (which may be empty), costs and warnings.
struct ScoreInputs {
  std::vector<std::vector<int32_t>> sources, targets;
  std::vector<int64_t> costs;
  std::vector<std::vector<std::string>> warnings;
};

// Reads "source" and "target" (as many of each) and encodes them.
ScoreInputs score_inputs(const LoadedModel& m, const Fields& f, const ServerOptions& limits);

// An embed request's texts encoded ("texts[i]" in errors): the ids the encoder reads (specials
// included), each one's cost in the batcher, and the warnings of their cleaning.
struct EmbedInputs {
  std::vector<std::vector<int32_t>> ids;
  std::vector<int64_t> costs;
  std::vector<std::vector<std::string>> warnings;
  bool any_warning = false;
};

// Cleans and encodes `texts`; an empty one, one without tokens, or one over --max-input-tokens
// (specials included) is a 400 naming it.
EmbedInputs embed_inputs(const transformer::Encoder& encoder, const std::vector<std::string>& texts,
                         const ServerOptions& limits);

}  // namespace tfm::serve
