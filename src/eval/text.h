#pragma once
// Text handling shared by the metrics in src/eval. sacreBLEU works on Python strings, so to get its
// numbers exactly we work on Unicode code points too and reproduce the few Python string operations
// it relies on: str.split() (which splits on Unicode whitespace, not just ASCII), str.rstrip() and
// str.lower() (full Unicode case mapping, including the final-sigma rule).
#include <string>
#include <string_view>
#include <vector>

namespace tfm {

// Decodes strict UTF-8 as Python's "utf-8" codec does (no overlong forms, no surrogates, nothing
// above U+10FFFF). Throws tfm::Error naming `where` (e.g. "ref.de line 7") and the bad byte.
std::u32string decode_utf8(std::string_view text, std::string_view where);
std::string encode_utf8(std::u32string_view text);

// Python's str.isspace() for one code point: ASCII whitespace, U+001C..U+001F, U+0085, U+00A0,
// U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_unicode_space(char32_t c);

// str.split() with no argument: runs of whitespace separate, leading and trailing ones are dropped.
// The views point into `text`.
std::vector<std::u32string_view> split_whitespace(std::u32string_view text);

// str.rstrip() with no argument.
std::u32string_view rstrip_whitespace(std::u32string_view text);

// str.lower(), from tables generated off Python's Unicode database (src/eval/unicode_tables.inc).
std::u32string unicode_lower(std::u32string_view text);

// The lines of a UTF-8 text file the way Python reads it with newline="\n" (as sacreBLEU does): split
// on "\n" only, a final "\n" ends the last line rather than starting an empty one. Every line is
// checked to be valid UTF-8; errors name the file and the 1-based line.
std::vector<std::string> read_text_lines(const std::string& path);
// The same for text already in memory; `name` is what errors call it (e.g. "stdin").
std::vector<std::string> split_text_lines(std::string_view text, std::string_view name);

}  // namespace tfm
