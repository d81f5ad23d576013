// tokenizer.json's pre-tokenizers: BertPreTokenizer, ByteLevel, Split, Metaspace, Whitespace,
// WhitespaceSplit, Punctuation, Digits and Sequence, with the tokenizers library's semantics.
#include <functional>
#include <utility>

#include "core/error.h"
#include "core/json_text.h"
#include "data/hf_byte_level.h"
#include "data/hf_components.h"

namespace tfm::hf {
namespace {

using Spans = std::vector<std::pair<size_t, size_t>>;

// Each character for which `pred` holds is a match of its own.
Spans char_matches(std::string_view text, const std::function<bool(char32_t)>& pred) {
  Spans out;
  for (size_t i = 0; i < text.size();) {
    const auto [c, n] = unicode::decode_at(text, i);
    if (pred(c)) out.emplace_back(i, i + n);
    i += n;
  }
  return out;
}

// Every piece split by `matches_of(piece text)`.
template <class F>
std::vector<Piece> split_all(const std::vector<Piece>& pieces, F matches_of, Behavior behavior, bool invert = false) {
  std::vector<Piece> out;
  for (const auto& p : pieces) {
    for (auto& q : split_piece(p, matches_of(p.text), behavior, invert)) out.push_back(std::move(q));
  }
  return out;
}

bool is_bert_punctuation(char32_t c) {
  return (c < 0x80 && std::ispunct(static_cast<int>(c))) || unicode::is_punctuation(c);
}

class CharSplit : public PreTokenizer {
 public:
  CharSplit(std::function<bool(char32_t)> pred, Behavior behavior) : pred_(std::move(pred)), behavior_(behavior) {}
  std::vector<Piece> pre_tokenize(std::vector<Piece> pieces) const override {
    return split_all(pieces, [&](const std::string& t) { return char_matches(t, pred_); }, behavior_);
  }

 private:
  std::function<bool(char32_t)> pred_;
  Behavior behavior_;
};

class BertPreTokenizer : public PreTokenizer {
 public:
  std::vector<Piece> pre_tokenize(std::vector<Piece> pieces) const override {
    pieces = CharSplit(unicode::is_white_space, Behavior::kRemoved).pre_tokenize(std::move(pieces));
    return CharSplit(is_bert_punctuation, Behavior::kIsolated).pre_tokenize(std::move(pieces));
  }
};

class RegexSplit : public PreTokenizer {
 public:
  RegexSplit(unicode::Regex regex, Behavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  std::vector<Piece> pre_tokenize(std::vector<Piece> pieces) const override {
    return split_all(pieces, [&](const std::string& t) { return regex_.find_all(t); }, behavior_, invert_);
  }

 private:
  unicode::Regex regex_;
  Behavior behavior_;
  bool invert_;
};

// The GPT-2 pattern ByteLevel splits with when use_regex is set.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool prefix_space, bool use_regex)
      : prefix_space_(prefix_space), regex_(use_regex ? std::make_unique<unicode::Regex>(kGpt2Pattern, "ByteLevel") : nullptr) {}
  std::vector<Piece> pre_tokenize(std::vector<Piece> pieces) const override {
    std::vector<Piece> out;
    for (auto& p : pieces) {
      if (prefix_space_ && (p.text.empty() || p.text[0] != ' ')) p.text = " " + p.text;
      if (!regex_) {
        out.push_back(std::move(p));
        continue;
      }
      for (auto& q : split_piece(p, regex_->find_all(p.text), Behavior::kIsolated)) out.push_back(std::move(q));
    }
    for (auto& p : out) p.text = bytes_to_unicode(p.text);
    return out;
  }

 private:
  bool prefix_space_;
  std::unique_ptr<unicode::Regex> regex_;
};

class Metaspace : public PreTokenizer {
 public:
  Metaspace(std::string replacement, std::string scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(std::move(scheme)), split_(split) {}
  std::vector<Piece> pre_tokenize(std::vector<Piece> pieces) const override {
    std::vector<Piece> out;
    for (auto& p : pieces) {
      std::string text;
      for (char c : p.text) {
        if (c == ' ') {
          text += replacement_;
        } else {
          text += c;
        }
      }
      const bool starts = text.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (scheme_ == "always" || (scheme_ == "first" && p.at_start))) text.insert(0, replacement_);
      Piece q{std::move(text), p.at_start};
      if (!split_) {
        out.push_back(std::move(q));
        continue;
      }
      Spans matches;
      for (size_t i = q.text.find(replacement_); i != std::string::npos; i = q.text.find(replacement_, i + 1)) {
        matches.emplace_back(i, i + replacement_.size());
      }
      for (auto& r : split_piece(q, matches, Behavior::kMergedWithNext)) out.push_back(std::move(r));
    }
    return out;
  }

 private:
  std::string replacement_, scheme_;
  bool split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  std::vector<Piece> pre_tokenize(std::vector<Piece> pieces) const override {
    for (const auto& p : parts_) pieces = p->pre_tokenize(std::move(pieces));
    return pieces;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

std::unique_ptr<PreTokenizer> make_sequence(const nlohmann::json& spec, const Where& where) {
  const auto& list = required(spec, "pretokenizers", where);
  if (!list.is_array()) where["pretokenizers"].fail(cat("must be a list, got ", json_quote(list)));
  std::vector<std::unique_ptr<PreTokenizer>> parts;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].is_null()) where["pretokenizers"][i].fail("must be a pre-tokenizer, got null");
    parts.push_back(make_pre_tokenizer(list[i], where["pretokenizers"][i]));
  }
  return std::make_unique<SequencePreTokenizer>(std::move(parts));
}

std::unique_ptr<PreTokenizer> make_metaspace(const nlohmann::json& spec, const Where& where) {
  const std::string replacement = get_string(spec, "replacement", "\u2581", where);
  if (unicode::to_utf32(replacement).size() != 1) {
    where["replacement"].fail(cat("must be one character, got '", replacement, "'"));
  }
  std::string scheme = get_string(spec, "prepend_scheme", "always", where);
  if (scheme != "always" && scheme != "first" && scheme != "never") {
    where["prepend_scheme"].fail(cat("must be always, first or never, got '", scheme, "'"));
  }
  if (!get_bool(spec, "add_prefix_space", true, where)) {
    if (spec.contains("prepend_scheme") && scheme != "never") where["add_prefix_space"].fail("false contradicts prepend_scheme");
    scheme = "never";
  }
  return std::make_unique<Metaspace>(replacement, scheme, get_bool(spec, "split", true, where));
}

std::unique_ptr<PreTokenizer> make_split(const nlohmann::json& spec, const Where& where) {
  return std::make_unique<RegexSplit>(make_pattern(required(spec, "pattern", where), where["pattern"]),
                                      parse_behavior(required(spec, "behavior", where), where["behavior"]),
                                      get_bool(spec, "invert", false, where));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec, const Where& where) {
  if (spec.is_null()) return nullptr;
  const std::string type = type_of(spec, where);
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(get_bool(spec, "add_prefix_space", true, where),
                                                   get_bool(spec, "use_regex", true, where));
  }
  if (type == "Split") return make_split(spec, where);
  if (type == "Metaspace") return make_metaspace(spec, where);
  if (type == "Whitespace") {
    // \w+|[^\w\s]+ kept, the rest removed.
    return std::make_unique<RegexSplit>(unicode::Regex(R"(\w+|[^\w\s]+)", "Whitespace"), Behavior::kRemoved, true);
  }
  if (type == "WhitespaceSplit") return std::make_unique<CharSplit>(unicode::is_white_space, Behavior::kRemoved);
  if (type == "Punctuation") {
    const Behavior b = spec.contains("behavior") ? parse_behavior(spec["behavior"], where["behavior"]) : Behavior::kIsolated;
    return std::make_unique<CharSplit>(is_bert_punctuation, b);
  }
  if (type == "Digits") {
    return std::make_unique<CharSplit>(unicode::is_numeric, get_bool(spec, "individual_digits", false, where)
                                                                ? Behavior::kIsolated
                                                                : Behavior::kContiguous);
  }
  if (type == "Sequence") return make_sequence(spec, where);
  where["type"].fail(cat("pre-tokenizer '", type,
                         "' is not supported (supported: BertPreTokenizer, ByteLevel, Split, Metaspace, Whitespace, "
                         "WhitespaceSplit, Punctuation, Digits, Sequence)"));
}

}  // namespace tfm::hf
