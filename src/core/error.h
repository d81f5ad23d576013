#pragma once
// Errors a user can cause (a wrong shape, an out-of-range id, a malformed file) are exceptions that
// carry the values involved. Never assert() on them: asserts vanish in release builds.
#include <sstream>
#include <stdexcept>
#include <string>

namespace tfm {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
