#pragma once
// Unicode for the Hugging Face tokenizers, through ICU: UTF-8 repair and code points, the four
// normalization forms, full lowercasing of one character, the character classes Rust's char and
// regex crates define, and regular expressions.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfm::unicode {

// `s` with each maximal ill-formed subpart replaced by U+FFFD (as ICU's converter and Python's
// bytes.decode(errors="replace") do); valid UTF-8 is returned unchanged.
std::string repair(std::string_view s);

std::u32string to_utf32(std::string_view utf8);  // valid UTF-8
std::string to_utf8(std::u32string_view text);
void append_utf8(std::string& out, char32_t c);
// The code point starting at byte `i` of valid UTF-8 and its length in bytes.
std::pair<char32_t, size_t> decode_at(std::string_view s, size_t i);

enum class Form { kNfc, kNfd, kNfkc, kNfkd };
std::string normalize(std::string_view utf8, Form form);

// Rust's char::to_lowercase: the full, context-free mapping of one character (İ → i̇, Σ → σ).
void append_lowercase(std::string& out, char32_t c);

bool is_white_space(char32_t c);   // the White_Space property (Rust's char::is_whitespace)
bool is_other(char32_t c);         // general category C (Cc, Cf, Cs, Co, Cn)
bool is_punctuation(char32_t c);   // general category P
bool is_mark(char32_t c);          // general category M
bool is_mark_nonspacing(char32_t c);  // Mn
bool is_numeric(char32_t c);       // general category N (Rust's char::is_numeric)
bool is_word(char32_t c);          // regex \w: alphabetic, M, Nd, Pc, joiners

// A regular expression of tokenizer.json (written for Oniguruma, the tokenizers library's engine),
// run by ICU, whose syntax and classes (\p{L}, \s as White_Space, (?i:...), lookahead) agree for
// these patterns. Matches are byte offsets into UTF-8.
class Regex {
 public:
  // Throws naming `what` and the pattern when ICU cannot compile it.
  Regex(std::string_view pattern, const std::string& what);
  Regex(Regex&&) noexcept;
  ~Regex();
  // The non-overlapping matches, leftmost first, as [begin, end) byte ranges.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view utf8) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A pattern matching `literal` exactly.
std::string escape_regex(std::string_view literal);

}  // namespace tfm::unicode
