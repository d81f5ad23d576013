#pragma once
// Errors a user can cause (a wrong shape, an out-of-range id, a malformed file) are exceptions that
// carry the values involved. Never assert() on them: asserts vanish in release builds.
#include <sstream>
#include <stdexcept>
#include <string>

#include "transformer/error.h"

namespace tfm {

// The public API's exception type (include/transformer/error.h), thrown by the whole library.
using Error = transformer::Error;

// Concatenates any streamable values into one string: cat("shape ", s, " has ", n, " dims").
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

}  // namespace tfm

// TFM_CHECK(condition, message parts...): throws tfm::Error with the parts concatenated.
#define TFM_CHECK(cond, ...)                                    \
  do {                                                          \
    if (!(cond)) throw ::tfm::Error(::tfm::cat(__VA_ARGS__));   \
  } while (0)
