#pragma once
// GPT-2's byte-level alphabet: each byte as one printable character (bytes that are printable in
// Latin-1 stand for themselves; the others map to U+0100 onwards), and back.
#include <optional>
#include <string>
#include <string_view>

namespace tfm::hf {

// Every byte of `text` as its character of the alphabet, in UTF-8.
std::string bytes_to_unicode(std::string_view text);
// The bytes a token's characters stand for; nullopt when a character is not of the alphabet.
std::optional<std::string> unicode_to_bytes(std::string_view token);

}  // namespace tfm::hf
