#pragma once
// Errors a user can cause (a wrong shape, an out-of-range id, a malformed file) are exceptions that
// carry the values involved. Never assert() on them: asserts vanish in release builds.
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "transformer/error.h"

namespace tfm {

// The public API's exception type (include/transformer/error.h), thrown by the whole library.
using Error = transformer::Error;

// Host memory that could not be had (a tensor's allocation): callers that know what the memory was
// for add it (the trainer names the batch and the limits to lower).
using OutOfMemory = transformer::OutOfMemory;

// Concatenates any streamable values into one string: cat("shape ", s, " has ", n, " dims").
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// Text from a file, for a message: at most 120 bytes, control characters as \xNN (UTF-8 as is),
// "..." when cut.
inline std::string printable(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < 120; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (text.size() > 120) out += "...";
  return out;
}

}  // namespace tfm

// TFM_CHECK(condition, message parts...): throws tfm::Error with the parts concatenated.
#define TFM_CHECK(cond, ...)                                    \
  do {                                                          \
    if (!(cond)) throw ::tfm::Error(::tfm::cat(__VA_ARGS__));   \
  } while (0)
