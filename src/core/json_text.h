#pragma once
// JSON text read by the program (files, metadata strings, flags): one nesting limit for all of it,
// checked while parsing, and values quoted into messages as a bounded prefix. Deep nesting would
// otherwise overflow the stack in nlohmann's recursive dump(), copies and comparisons.
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tfm {

// The deepest nesting of arrays and objects accepted: no file the program reads needs more than a
// few levels.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`; `source` names it in errors ("config.json", "m.safetensors: metadata 'config'").
// Throws tfm::Error naming the source on invalid JSON and on nesting deeper than kMaxJsonDepth.
nlohmann::json parse_json(std::string_view text, std::string_view source);

// As parse_json, but invalid JSON gives a discarded value (is_discarded()) for callers that pass
// over it (a torn line); nesting deeper than kMaxJsonDepth still throws.
nlohmann::json parse_json_or_discarded(std::string_view text, std::string_view source);

// A value as messages quote it: compact JSON cut to at most `limit` characters ("..." when cut),
// built without walking deeper than what it prints.
std::string json_quote(const nlohmann::json& value, size_t limit = 80);

}  // namespace tfm
