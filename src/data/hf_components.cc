// What the parts of a Hugging Face tokenizer share: tokenizer.json's fields read with errors naming
// the field, and the split of a piece of text by a pattern's matches.
#include "data/hf_components.h"

#include <algorithm>

#include "core/error.h"
#include "core/json_text.h"

namespace tfm::hf {

void Where::fail(const std::string& problem) const {
  throw Error(cat(file, ": ", path.empty() ? "" : path + ": ", problem));
}

const nlohmann::json& required(const nlohmann::json& obj, const std::string& key, const Where& where) {
  if (!obj.is_object()) where.fail(cat("must be an object, got ", json_quote(obj)));
  const auto it = obj.find(key);
  if (it == obj.end()) where[key].fail("is missing");
  return *it;
}

template <class Check>
static const nlohmann::json* field(const nlohmann::json& obj, const std::string& key, const Where& where,
                                   Check is_type, const char* type) {
  if (!obj.is_object()) where.fail(cat("must be an object, got ", json_quote(obj)));
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  if (!is_type(*it)) where[key].fail(cat("must be ", type, ", got ", json_quote(*it)));
  return &*it;
}

bool get_bool(const nlohmann::json& obj, const std::string& key, bool fallback, const Where& where) {
  const auto* v = field(obj, key, where, [](const nlohmann::json& j) { return j.is_boolean(); }, "true or false");
  return v ? v->get<bool>() : fallback;
}

std::string get_string(const nlohmann::json& obj, const std::string& key, const std::string& fallback,
                       const Where& where) {
  const auto* v = field(obj, key, where, [](const nlohmann::json& j) { return j.is_string(); }, "a string");
  return v ? v->get<std::string>() : fallback;
}

int64_t get_int(const nlohmann::json& obj, const std::string& key, int64_t fallback, const Where& where) {
  const auto* v = field(
      obj, key, where, [](const nlohmann::json& j) { return j.is_number_integer() && j.get<int64_t>() >= 0; },
      "a non-negative integer");
  return v ? v->get<int64_t>() : fallback;
}

std::string type_of(const nlohmann::json& obj, const Where& where) {
  const auto& t = required(obj, "type", where);
  if (!t.is_string()) where["type"].fail(cat("must be a string, got ", json_quote(t)));
  return t.get<std::string>();
}

Behavior parse_behavior(const nlohmann::json& value, const Where& where) {
  const std::string b = value.is_string() ? value.get<std::string>() : "";
  if (b == "Removed") return Behavior::kRemoved;
  if (b == "Isolated") return Behavior::kIsolated;
  if (b == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::kMergedWithNext;
  if (b == "Contiguous") return Behavior::kContiguous;
  where.fail(cat("unknown split behavior ", json_quote(value),
                 " (known: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)"));
}

unicode::Regex make_pattern(const nlohmann::json& pattern, const Where& where) {
  if (pattern.is_object() && pattern.size() == 1) {
    if (pattern.contains("String") && pattern["String"].is_string()) {
      return unicode::Regex(unicode::escape_regex(pattern["String"].get<std::string>()), where.file);
    }
    if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
      return unicode::Regex(pattern["Regex"].get<std::string>(), cat(where.file, ": ", where.path));
    }
  }
  where.fail(cat("must be {\"String\": ...} or {\"Regex\": ...}, got ", json_quote(pattern)));
}

Vocabulary read_vocabulary(const nlohmann::json& vocab, const Where& where) {
  if (!vocab.is_object()) where.fail(cat("must be an object of tokens and ids, got ", json_quote(vocab)));
  Vocabulary out;
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t{1} << 31)) {
      where[token].fail(cat("must be an id (0 to 2^31 - 1), got ", json_quote(id)));
    }
    const auto i = static_cast<size_t>(id.get<int64_t>());
    if (i >= out.by_id.size()) out.by_id.resize(i + 1);
    if (!out.by_id[i].empty() || out.ids.count(token)) where[token].fail(cat("id ", i, " is given twice"));
    out.by_id[i] = token;
    out.ids[token] = static_cast<int32_t>(i);
  }
  return out;
}

Vocabulary vocabulary_of(std::vector<std::string> pieces, const Where& where) {
  Vocabulary out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    // A repeated piece keeps its last id, as the library's vocabulary map does.
    out.ids[pieces[i]] = static_cast<int32_t>(i);
  }
  if (pieces.empty()) where.fail("has no pieces");
  out.by_id = std::move(pieces);
  return out;
}

using Span = std::pair<size_t, size_t>;

// The text cut into matched and unmatched spans, in order (the library's find_matches).
static std::vector<std::pair<Span, bool>> spans(size_t size, const std::vector<Span>& matches) {
  std::vector<std::pair<Span, bool>> out;
  if (size == 0) return {{{0, 0}, false}};
  size_t prev = 0;
  for (const auto& [b, e] : matches) {
    if (prev != b) out.push_back({{prev, b}, false});
    out.push_back({{b, e}, true});
    prev = e;
  }
  if (prev != size) out.push_back({{prev, size}, false});
  return out;
}

// Which spans to keep (true: removed), merging per the behavior.
static std::vector<std::pair<Span, bool>> apply(std::vector<std::pair<Span, bool>> in, Behavior behavior) {
  using B = Behavior;
  if (behavior == B::kRemoved) return in;
  std::vector<std::pair<Span, bool>> out;
  if (behavior == B::kIsolated) {
    for (auto& [s, m] : in) out.push_back({s, false});
    return out;
  }
  const bool next = behavior == B::kMergedWithNext;
  if (next) std::reverse(in.begin(), in.end());
  bool previous = false;
  for (auto& [s, m] : in) {
    const bool merge = behavior == B::kContiguous ? m == previous : (m && !previous);
    if (merge && !out.empty()) {
      (next ? out.back().first.first : out.back().first.second) = next ? s.first : s.second;
    } else {
      out.push_back({s, false});
    }
    previous = m;
  }
  if (next) std::reverse(out.begin(), out.end());
  return out;
}

std::vector<Piece> split_piece(const Piece& piece, const std::vector<Span>& matches, Behavior behavior,
                               bool invert) {
  auto parts = spans(piece.text.size(), matches);
  if (invert) {
    for (auto& p : parts) p.second = !p.second;
  }
  std::vector<Piece> out;
  for (const auto& [s, removed] : apply(std::move(parts), behavior)) {
    if (removed || s.first == s.second) continue;
    out.push_back({piece.text.substr(s.first, s.second - s.first), piece.at_start && s.first == 0});
  }
  return out;
}

std::string_view strip_white_space(std::string_view text, bool left, bool right) {
  size_t b = 0, e = text.size();
  while (left && b < e) {
    const auto [c, n] = unicode::decode_at(text, b);
    if (!unicode::is_white_space(c)) break;
    b += n;
  }
  while (right && e > b) {
    size_t s = e - 1;
    while (s > b && (static_cast<unsigned char>(text[s]) & 0xC0) == 0x80) --s;
    if (!unicode::is_white_space(unicode::decode_at(text, s).first)) break;
    e = s;
  }
  return text.substr(b, e - b);
}

}  // namespace tfm::hf
