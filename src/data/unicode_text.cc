// ICU behind data/unicode_text.h.
#include "data/unicode_text.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utext.h>

#include "core/error.h"
#include "data/text.h"

namespace tfm::unicode {

std::string repair(std::string_view s) {
  if (valid_utf8(s)) return std::string(s);
  UErrorCode status = U_ZERO_ERROR;
  int32_t length = 0;
  std::u16string utf16(s.size() + 1, u'\0');
  u_strFromUTF8WithSub(utf16.data(), static_cast<int32_t>(utf16.size()), &length, s.data(),
                       static_cast<int32_t>(s.size()), 0xFFFD, nullptr, &status);
  TFM_CHECK(U_SUCCESS(status), "UTF-8 repair failed: ", u_errorName(status));
  utf16.resize(static_cast<size_t>(length));
  std::string out;
  icu::UnicodeString(false, utf16.data(), length).toUTF8String(out);
  return out;
}

std::pair<char32_t, size_t> decode_at(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return {b, 1};
  const size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
  char32_t c = b & (0x7F >> n);
  for (size_t k = 1; k < n && i + k < s.size(); ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return {c, n};
}

std::u32string to_utf32(std::string_view utf8) {
  std::u32string out;
  out.reserve(utf8.size());
  for (size_t i = 0; i < utf8.size();) {
    const auto [c, n] = decode_at(utf8, i);
    out.push_back(c);
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string to_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) append_utf8(out, c);
  return out;
}

std::string normalize(std::string_view utf8, Form form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case Form::kNfc: n = icu::Normalizer2::getNFCInstance(status); break;
    case Form::kNfd: n = icu::Normalizer2::getNFDInstance(status); break;
    case Form::kNfkc: n = icu::Normalizer2::getNFKCInstance(status); break;
    case Form::kNfkd: n = icu::Normalizer2::getNFKDInstance(status); break;
  }
  TFM_CHECK(U_SUCCESS(status), "ICU normalizer unavailable: ", u_errorName(status));
  const auto text = icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), static_cast<int32_t>(utf8.size())));
  if (n->isNormalized(text, status) && U_SUCCESS(status)) return std::string(utf8);
  status = U_ZERO_ERROR;
  const icu::UnicodeString result = n->normalize(text, status);
  TFM_CHECK(U_SUCCESS(status), "ICU normalization failed: ", u_errorName(status));
  std::string out;
  result.toUTF8String(out);
  return out;
}

void append_lowercase(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  // One character alone: ICU's contextual rules (final sigma) see no context, as Rust's mapping.
  icu::UnicodeString s(static_cast<UChar32>(c));
  s.toLower(icu::Locale::getRoot());
  s.toUTF8String(out);
}

static bool in_category(char32_t c, uint32_t mask) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & mask) != 0; }

bool is_white_space(char32_t c) { return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE); }
bool is_other(char32_t c) { return in_category(c, U_GC_C_MASK); }
bool is_punctuation(char32_t c) { return in_category(c, U_GC_P_MASK); }
bool is_mark(char32_t c) { return in_category(c, U_GC_M_MASK); }
bool is_mark_nonspacing(char32_t c) { return in_category(c, U_GC_MN_MASK); }
bool is_numeric(char32_t c) { return in_category(c, U_GC_N_MASK); }
bool is_word(char32_t c) {
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC) ||
         in_category(c, U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK) ||
         u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_JOIN_CONTROL);
}

std::string escape_regex(std::string_view literal) {
  // \Q...\E quotes everything but "\E" itself, which is written as \\E.
  std::string out = "\\Q";
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal.substr(i, 2) == "\\E") {
      out += "\\E\\\\E\\Q";
      ++i;
    } else {
      out += literal[i];
    }
  }
  return out + "\\E";
}

struct Regex::Impl {
  std::unique_ptr<icu::RegexPattern> pattern;
  std::string description;  // what, and the pattern, for errors
};

// The work one search may take, in ICU's time-limit steps (10,000 operations of its match engine
// each, so the limit does not depend on the machine's speed): the patterns of real tokenizers find
// a match in a few steps even in a 10,000-character word, while one that backtracks
// catastrophically ("(a|aa)+$") would otherwise never end.
constexpr int32_t kRegexStepLimit = 1'000;

Regex::Regex(std::string_view pattern, const std::string& what) : impl_(std::make_unique<Impl>()) {
  // ICU's \s is White_Space, as Oniguruma's (U+000B, U+0085 and U+2028 included): patterns need no
  // translation.
  const std::string_view icu_pattern = pattern;
  UErrorCode status = U_ZERO_ERROR;
  UParseError where{};
  impl_->pattern.reset(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(icu::StringPiece(icu_pattern.data(), static_cast<int32_t>(icu_pattern.size()))), 0,
      where, status));
  TFM_CHECK(U_SUCCESS(status), what, ": regular expression ", printable(pattern), " is not supported (",
            u_errorName(status), " at offset ", where.offset, ")");
  impl_->description = cat(what, ": regular expression ", printable(pattern));
}

Regex::Regex(Regex&&) noexcept = default;
Regex::~Regex() = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view utf8) const {
  std::vector<std::pair<size_t, size_t>> out;
  UErrorCode status = U_ZERO_ERROR;
  UText* text = utext_openUTF8(nullptr, utf8.data(), static_cast<int64_t>(utf8.size()), &status);
  std::unique_ptr<icu::RegexMatcher> matcher(impl_->pattern->matcher(status));
  if (U_SUCCESS(status)) matcher->reset(text);
  if (U_SUCCESS(status)) matcher->setTimeLimit(kRegexStepLimit, status);
  while (U_SUCCESS(status) && matcher->find(status)) {
    out.emplace_back(static_cast<size_t>(matcher->start64(status)), static_cast<size_t>(matcher->end64(status)));
  }
  matcher.reset();
  utext_close(text);
  TFM_CHECK(status != U_REGEX_TIME_OUT, impl_->description, " did not finish a search in a text of ", utf8.size(),
            " bytes (it backtracks without end on such a text)");
  TFM_CHECK(U_SUCCESS(status), impl_->description, ": the search failed: ", u_errorName(status));
  return out;
}

}  // namespace tfm::unicode
