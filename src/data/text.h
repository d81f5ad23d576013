#pragma once
// Text helpers for input lines: UTF-8 validity, trimming, line reading.
#include <cstdint>
#include <string>
#include <string_view>

namespace tfm {

// True if `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view s);
// `s` with every ill-formed byte sequence replaced by U+FFFD.
std::string repair_utf8(std::string_view s);
// Strips surrounding whitespace (spaces, tabs, CR, LF, vertical tab, form feed).
std::string_view trim(std::string_view s);
// Number of Unicode code points (of valid UTF-8).
int64_t utf8_length(std::string_view s);

}  // namespace tfm
