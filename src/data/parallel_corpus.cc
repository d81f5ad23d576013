#include "data/parallel_corpus.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/text.h"

namespace tfm {

std::string CorpusStats::summary() const {
  return cat(lines, lines == 1 ? " pair, " : " pairs, ", kept, " kept; skipped: ", empty, " empty, ", too_long, " too long, ", invalid_utf8,
             " invalid UTF-8");
}

namespace {
std::vector<std::string> read_raw_lines(const std::string& path) {
  TFM_CHECK(!std::filesystem::is_directory(path), "'", path, "' is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  TFM_CHECK(in, "cannot open '", path, "': ", std::strerror(errno));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(std::move(line));
  TFM_CHECK(!in.bad(), "error reading '", path, "'");
  return lines;
}
}  // namespace

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines = read_raw_lines(path);
  for (std::string& l : lines) l = std::string(trim(l));
  return lines;
}

std::vector<SentencePair> read_parallel(const std::string& source_path, const std::string& target_path,
                                        int64_t max_chars, CorpusStats* stats) {
  const std::vector<std::string> src = read_raw_lines(source_path), tgt = read_raw_lines(target_path);
  TFM_CHECK(src.size() == tgt.size(), "parallel files differ in length: '", source_path, "' has ", src.size(),
            " lines but '", target_path, "' has ", tgt.size());
  CorpusStats s;
  std::vector<SentencePair> pairs;
  pairs.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    ++s.lines;
    const std::string_view a = trim(src[i]), b = trim(tgt[i]);
    if (!valid_utf8(a) || !valid_utf8(b)) {
      ++s.invalid_utf8;
    } else if (a.empty() || b.empty()) {
      ++s.empty;
    } else if (max_chars > 0 && (utf8_length(a) > max_chars || utf8_length(b) > max_chars)) {
      ++s.too_long;
    } else {
      pairs.push_back({std::string(a), std::string(b)});
      ++s.kept;
    }
  }
  if (stats) *stats = s;
  return pairs;
}

}  // namespace tfm
