#pragma once
// Monolingual text for language-model training: one sentence per line, trimmed; an empty line, one
// longer than the limit or one that is not valid UTF-8 is skipped and counted, never fatal.
#include <cstdint>
#include <string>
#include <vector>

namespace tfm {

struct TextStats {
  int64_t lines = 0;
  int64_t kept = 0;
  int64_t empty = 0;
  int64_t too_long = 0;      // longer than max_chars code points
  int64_t invalid_utf8 = 0;
  std::string summary() const;  // "29000 lines, 28990 kept; skipped: 3 empty, 7 too long, 0 invalid UTF-8"
};

// The usable lines of `path`, in order (max_chars 0: no limit).
std::vector<std::string> read_monolingual(const std::string& path, int64_t max_chars, TextStats* stats);

}  // namespace tfm
