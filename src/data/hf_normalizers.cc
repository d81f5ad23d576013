// tokenizer.json's normalizers: BertNormalizer, the Unicode forms, Lowercase, StripAccents,
// Prepend, Replace, Strip and Sequence, with the tokenizers library's semantics.
#include <utility>

#include "core/error.h"
#include "core/json_text.h"
#include "data/hf_components.h"

namespace tfm::hf {
namespace {

using unicode::decode_at;

// Each character mapped to a string (possibly empty) by `f`.
template <class F>
std::string map_chars(const std::string& text, F f) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto [c, n] = decode_at(text, i);
    f(c, std::string_view(text).substr(i, n), out);
    i += n;
  }
  return out;
}

std::string lowercase(const std::string& text) {
  return map_chars(text, [](char32_t c, std::string_view, std::string& out) { unicode::append_lowercase(out, c); });
}

std::string drop_marks(const std::string& text, bool nonspacing_only) {
  return map_chars(text, [&](char32_t c, std::string_view bytes, std::string& out) {
    if (!(nonspacing_only ? unicode::is_mark_nonspacing(c) : unicode::is_mark(c))) out += bytes;
  });
}

bool is_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean, bool chinese, bool strip, bool lower)
      : clean_(clean), chinese_(chinese), strip_(strip), lower_(lower) {}
  std::string normalize(std::string text) const override {
    if (clean_) {
      text = map_chars(text, [](char32_t c, std::string_view bytes, std::string& out) {
        const bool tab_or_newline = c == '\t' || c == '\n' || c == '\r';
        if (c == 0 || c == 0xFFFD || (!tab_or_newline && unicode::is_other(c))) return;
        if (tab_or_newline || unicode::is_white_space(c)) {
          out += ' ';
        } else {
          out += bytes;
        }
      });
    }
    if (chinese_) {
      text = map_chars(text, [](char32_t c, std::string_view bytes, std::string& out) {
        if (is_chinese(c)) {
          out += ' ';
          out += bytes;
          out += ' ';
        } else {
          out += bytes;
        }
      });
    }
    if (strip_) text = drop_marks(unicode::normalize(text, unicode::Form::kNfd), true);
    if (lower_) text = lowercase(text);
    return text;
  }

 private:
  bool clean_, chinese_, strip_, lower_;
};

class FormNormalizer : public Normalizer {
 public:
  explicit FormNormalizer(unicode::Form form) : form_(form) {}
  std::string normalize(std::string text) const override { return unicode::normalize(text, form_); }

 private:
  unicode::Form form_;
};

template <class F>
class FunctionNormalizer : public Normalizer {
 public:
  explicit FunctionNormalizer(F f) : f_(std::move(f)) {}
  std::string normalize(std::string text) const override { return f_(std::move(text)); }

 private:
  F f_;
};
template <class F>
std::unique_ptr<Normalizer> function_normalizer(F f) {
  return std::make_unique<FunctionNormalizer<F>>(std::move(f));
}

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(unicode::Regex pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string normalize(std::string text) const override {
    std::string out;
    size_t prev = 0;
    for (const auto& [b, e] : pattern_.find_all(text)) {
      out.append(text, prev, b - prev);
      out += content_;
      prev = e;
    }
    out.append(text, prev, std::string::npos);
    return out;
  }

 private:
  unicode::Regex pattern_;
  std::string content_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  std::string normalize(std::string text) const override {
    for (const auto& p : parts_) text = p->normalize(std::move(text));
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

std::unique_ptr<Normalizer> make_sequence(const nlohmann::json& spec, const Where& where) {
  const auto& list = required(spec, "normalizers", where);
  if (!list.is_array()) where["normalizers"].fail(cat("must be a list, got ", json_quote(list)));
  std::vector<std::unique_ptr<Normalizer>> parts;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].is_null()) where["normalizers"][i].fail("must be a normalizer, got null");
    parts.push_back(make_normalizer(list[i], where["normalizers"][i]));
  }
  return std::make_unique<SequenceNormalizer>(std::move(parts));
}

std::unique_ptr<Normalizer> make_bert(const nlohmann::json& spec, const Where& where) {
  const bool lower = get_bool(spec, "lowercase", true, where);
  // strip_accents null follows lowercase.
  return std::make_unique<BertNormalizer>(get_bool(spec, "clean_text", true, where),
                                          get_bool(spec, "handle_chinese_chars", true, where),
                                          get_bool(spec, "strip_accents", lower, where), lower);
}

std::unique_ptr<Normalizer> make_strip(const nlohmann::json& spec, const Where& where) {
  const bool left = get_bool(spec, "strip_left", true, where), right = get_bool(spec, "strip_right", true, where);
  return function_normalizer(
      [left, right](std::string text) { return std::string(strip_white_space(text, left, right)); });
}

std::unique_ptr<Normalizer> make_prepend(const nlohmann::json& spec, const Where& where) {
  const auto& p = required(spec, "prepend", where);
  if (!p.is_string()) where["prepend"].fail(cat("must be a string, got ", json_quote(p)));
  return function_normalizer([prefix = p.get<std::string>()](std::string text) {
    return text.empty() ? text : prefix + text;
  });
}

}  // namespace

std::unique_ptr<Normalizer> make_bert_normalizer(bool clean, bool chinese, bool strip, bool lower) {
  return std::make_unique<BertNormalizer>(clean, chinese, strip, lower);
}

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec, const Where& where) {
  if (spec.is_null()) return nullptr;
  const std::string type = type_of(spec, where);
  if (type == "BertNormalizer") return make_bert(spec, where);
  if (type == "NFC") return std::make_unique<FormNormalizer>(unicode::Form::kNfc);
  if (type == "NFD") return std::make_unique<FormNormalizer>(unicode::Form::kNfd);
  if (type == "NFKC") return std::make_unique<FormNormalizer>(unicode::Form::kNfkc);
  if (type == "NFKD") return std::make_unique<FormNormalizer>(unicode::Form::kNfkd);
  if (type == "Lowercase") return function_normalizer([](std::string text) { return lowercase(text); });
  if (type == "StripAccents") return function_normalizer([](std::string text) { return drop_marks(text, false); });
  if (type == "Strip") return make_strip(spec, where);
  if (type == "Prepend") return make_prepend(spec, where);
  if (type == "Replace") {
    const auto& content = required(spec, "content", where);
    if (!content.is_string()) where["content"].fail(cat("must be a string, got ", json_quote(content)));
    return std::make_unique<ReplaceNormalizer>(make_pattern(required(spec, "pattern", where), where["pattern"]),
                                               content.get<std::string>());
  }
  if (type == "Sequence") return make_sequence(spec, where);
  where["type"].fail(cat("normalizer '", type,
                         "' is not supported (supported: BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, "
                         "StripAccents, Strip, Prepend, Replace, Sequence)"));
}

}  // namespace tfm::hf
