// Reading a language model's training or validation text.
#include "data/monolingual_corpus.h"

#include "core/error.h"
#include "data/parallel_corpus.h"
#include "data/text.h"

namespace tfm {

std::string TextStats::summary() const {
  return cat(lines, lines == 1 ? " line, " : " lines, ", kept, " kept; skipped: ", empty, " empty, ", too_long,
             " too long, ", invalid_utf8, " invalid UTF-8");
}

std::vector<std::string> read_monolingual(const std::string& path, int64_t max_chars, TextStats* stats) {
  TextStats s;
  std::vector<std::string> kept;
  // read_lines trims each line; validity is checked on the trimmed text, as for parallel text.
  for (std::string& line : read_lines(path)) {
    ++s.lines;
    if (!valid_utf8(line)) ++s.invalid_utf8;
    else if (line.empty()) ++s.empty;
    else if (max_chars > 0 && utf8_length(line) > max_chars) ++s.too_long;
    else kept.push_back(std::move(line)), ++s.kept;
  }
  if (stats) *stats = s;
  return kept;
}

}  // namespace tfm
