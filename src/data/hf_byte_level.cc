// GPT-2's byte-level alphabet (data/hf_byte_level.h).
#include "data/hf_byte_level.h"

#include <array>

#include "data/unicode_text.h"

namespace tfm::hf {
namespace {

struct Alphabet {
  std::array<char32_t, 256> char_of{};
  std::array<std::string, 256> utf8_of;
  std::array<int, 256 + 68> byte_of{};  // −1 for a character not of the alphabet
  Alphabet() {
    byte_of.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char_of[b] = printable ? static_cast<char32_t>(b) : next++;
      unicode::append_utf8(utf8_of[b], char_of[b]);
      byte_of[char_of[b]] = b;
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

std::string bytes_to_unicode(std::string_view text) {
  const auto& a = alphabet();
  std::string out;
  out.reserve(text.size() * 2);
  for (unsigned char b : text) out += a.utf8_of[b];
  return out;
}

std::optional<std::string> unicode_to_bytes(std::string_view token) {
  const auto& a = alphabet();
  std::string out;
  for (size_t i = 0; i < token.size();) {
    const auto [c, n] = unicode::decode_at(token, i);
    i += n;
    const int byte = c < a.byte_of.size() ? a.byte_of[c] : -1;
    if (byte < 0) return std::nullopt;
    out += static_cast<char>(byte);
  }
  return out;
}

}  // namespace tfm::hf
