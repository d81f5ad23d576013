#pragma once
// translate's reading: the input (standard input or --input) in chunks of lines, read live from a
// terminal, pipe or FIFO; the --target-prefix lines that go with them; and --ids lines as token ids.
#include <ext/stdio_filebuf.h>

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "core/error.h"
#include "transformer/translator.h"

namespace tfm::cli {

// The input on its file descriptor, buffered, able to say whether a whole line is ready without
// blocking. It closes the descriptor when done.
class InputBuffer : public __gnu_cxx::stdio_filebuf<char> {
 public:
  explicit InputBuffer(int fd);
  // Whether a line, or the end of input, can be read without waiting, after up to `wait_ms` for it.
  bool line_ready(int wait_ms);

 private:
  int fd_;
};

// The input of a run (standard input when `path` is empty). Standard input and an --input that is
// not a regular file (a FIFO, /dev/stdin) are read live, line by line as they come; a regular file
// fills whole chunks.
class Input {
 public:
  explicit Input(const std::string& path);
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;

  // Reads up to `max` lines; returns false at end of input with nothing read.
  bool read_chunk(int64_t max, std::vector<std::string>& lines);
  // Whether the input has ended, where that is known without waiting; not once a stop signal has
  // put /dev/null over the input.
  bool ended();
  // The lines left (to name them in an error).
  int64_t count_rest();

  const std::string path;
  const bool is_file;
  const int fd;

 private:
  InputBuffer buffer_;
  std::istream in_;
  InputBuffer* const live_;  // the buffer when read live, else null
};

// The lines of a file as std::getline reads them (a last line without a newline counts).
int64_t count_lines(std::istream& in);

// --target-prefix: one line per input line, read whole; a count that differs is refused before
// anything is translated when the input is a file (counted first), else as soon as it shows.
class Prefixes {
 public:
  Prefixes(const std::string& path, const Input& input);

  bool given() const { return !path_.empty(); }
  // The prefixes of input lines first to last (counted from 1); none without --target-prefix.
  std::vector<std::string> of_lines(int64_t first, int64_t last, bool input_ended, Input& input) const;
  // After the input's last line (unless a signal stopped the reading): an input shorter than the prefixes.
  void check_end(int64_t lines) const;

 private:
  Error mismatch(int64_t input_lines) const;

  std::string path_;
  std::vector<std::string> lines_;
};

// A chunk of --ids lines (and their prefixes) as token ids, each cleaned first.
struct IdLines {
  std::vector<std::vector<int32_t>> sources, prefixes;
  std::vector<transformer::Repairs> repairs, prefix_repairs;
};

// Parses the lines of a chunk whose first is line `first`; an error names its line (and
// --target-prefix 'path' for a prefix's).
IdLines parse_id_lines(const transformer::Translator& t, const std::vector<std::string>& lines,
                       const std::vector<std::string>& prefixes, int64_t first, const std::string& prefix_path);

}  // namespace tfm::cli
