#pragma once
// Parallel text: two files, one sentence per line, line i of one the translation of line i of the
// other. Lines are trimmed (CR and surrounding whitespace); a pair that is empty on either side,
// longer than the limit, or not valid UTF-8 is skipped and counted, never fatal. Files of different
// line counts are an error naming both counts.
#include <cstdint>
#include <string>
#include <vector>

namespace tfm {

struct SentencePair {
  std::string source, target;
};

struct CorpusStats {
  int64_t lines = 0;          // pairs read
  int64_t kept = 0;
  int64_t empty = 0;          // skipped: empty on either side
  int64_t too_long = 0;       // skipped: a side longer than max_chars code points
  int64_t invalid_utf8 = 0;   // skipped: not valid UTF-8
  std::string summary() const;  // "29000 pairs, 28990 kept; skipped: 3 empty, 7 too long, 0 invalid UTF-8"
};

// max_chars: per side, in code points (0 = no limit).
std::vector<SentencePair> read_parallel(const std::string& source_path, const std::string& target_path,
                                        int64_t max_chars, CorpusStats* stats);

// Lines of one file, trimmed, in order (empty lines kept, for translation input).
std::vector<std::string> read_lines(const std::string& path);

}  // namespace tfm
