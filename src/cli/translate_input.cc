// translate's reading: chunks of input lines (live from a terminal, pipe or FIFO), the
// --target-prefix lines of each chunk with their count checked, and --ids lines parsed as token ids.
#include "cli/translate_input.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "cli/streams.h"
#include "cli/translate_stop.h"
#include "transformer/text.h"

namespace tfm::cli {

namespace {

// How long a chunk of a live input (standard input, a FIFO) waits for its next line, and at most
// for its last, before it is translated as it is.
constexpr int kLineWaitMs = 50, kChunkWaitMs = 1000;

}  // namespace

InputBuffer::InputBuffer(int fd) : __gnu_cxx::stdio_filebuf<char>(fd, std::ios::in, 1 << 16), fd_(fd) {}

bool InputBuffer::line_ready(int wait_ms) {
  if (std::find(gptr(), egptr(), '\n') != egptr()) return true;  // a whole line already buffered
  pollfd p{fd_, POLLIN, 0};
  // Readable (more of a line may come, or its end), ended (POLLHUP), or an error getline meets.
  return ::poll(&p, 1, wait_ms) != 0;
}

Input::Input(const std::string& path)
    : path(path), is_file(!path.empty() && std::filesystem::is_regular_file(path)),
      fd(path.empty() ? STDIN_FILENO : open_input_fd(path, "--input")), buffer_(fd), in_(&buffer_),
      live_(is_file ? nullptr : &buffer_) {}

// From a live input, the chunk also ends when no next line comes within kLineWaitMs, or
// kChunkWaitMs after its first line: lines typed, or written a few at a time by another program,
// are translated as they come, not once `max` of them have come or the input has ended (which held
// back every translation of a session). A file or a fast pipe still fills whole chunks.
bool Input::read_chunk(int64_t max, std::vector<std::string>& lines) {
  lines.clear();
  std::string line;
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<int64_t>(lines.size()) < max && stop_signal() == 0 && std::getline(in_, line)) {
    // A line the stop signal cut short (its read met the end that the handler put there) is not a
    // line of the input: it is left for the run that goes on.
    if (stop_signal() != 0 && in_.eof()) break;
    lines.push_back(line);
    if (live_ == nullptr) continue;
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    if (waited.count() >= kChunkWaitMs) break;
    if (!live_->line_ready(std::min<int>(kLineWaitMs, kChunkWaitMs - static_cast<int>(waited.count())))) break;
  }
  return !lines.empty();
}

bool Input::ended() {
  return stop_signal() == 0 && (live_ == nullptr || live_->line_ready(0)) &&
         in_.peek() == std::char_traits<char>::eof() && stop_signal() == 0;
}

int64_t Input::count_rest() { return count_lines(in_); }

int64_t count_lines(std::istream& in) {
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

Prefixes::Prefixes(const std::string& path, const Input& input) : path_(path) {
  if (!given()) return;
  std::ifstream prefix_file;
  open_input(prefix_file, path_, "--target-prefix");
  for (std::string line; std::getline(prefix_file, line);) lines_.push_back(line);
  TFM_CHECK(!prefix_file.bad(), "cannot read --target-prefix '", path_, "'");
  if (input.is_file) {
    std::ifstream count(input.path, std::ios::binary);
    const int64_t input_lines = count_lines(count);
    if (input_lines != static_cast<int64_t>(lines_.size())) throw mismatch(input_lines);
  }
}

Error Prefixes::mismatch(int64_t input_lines) const {
  return Error(cat("--target-prefix '", path_, "' has ", lines_.size(), " lines but the input has ", input_lines,
                   ": give one prefix per input line (an empty line for none)"));
}

std::vector<std::string> Prefixes::of_lines(int64_t first, int64_t last, bool input_ended, Input& input) const {
  if (!given()) return {};
  const auto count = static_cast<int64_t>(lines_.size());
  if (last > count) throw mismatch(last + input.count_rest());
  if (input_ended && last < count) throw mismatch(last);
  return {lines_.begin() + (first - 1), lines_.begin() + last};
}

void Prefixes::check_end(int64_t lines) const {
  if (given() && lines != static_cast<int64_t>(lines_.size())) throw mismatch(lines);
}

IdLines parse_id_lines(const transformer::Translator& t, const std::vector<std::string>& lines,
                       const std::vector<std::string>& prefixes, int64_t first, const std::string& prefix_path) {
  IdLines out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const transformer::CleanText clean = transformer::clean_input(lines[i]);
    out.sources.push_back(t.parse_ids(clean.text, first + static_cast<int64_t>(i)));
    out.repairs.push_back(clean.repairs);
  }
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const transformer::CleanText clean = transformer::clean_input(prefixes[i]);
    try {
      out.prefixes.push_back(t.parse_ids(clean.text, first + static_cast<int64_t>(i)));
    } catch (const Error& e) {
      throw Error(cat("--target-prefix '", prefix_path, "', ", e.what()));
    }
    out.prefix_repairs.push_back(clean.repairs);
  }
  return out;
}

}  // namespace tfm::cli
