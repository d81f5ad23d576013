#include "cli/streams.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace tfm::cli {

namespace {
// The file behind standard output, for the message: "/dev/full", "out.txt", "pipe:[123]".
std::string stdout_name() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/fd/1", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

[[noreturn]] void fail(int err) {
  if (err == EPIPE) throw BrokenPipe{};
  const std::string name = stdout_name();
  throw Error(cat("cannot write standard output", name.empty() ? "" : cat(" ('", name, "')"), ": ",
                  err ? std::strerror(err) : "a write to it failed"));
}
}  // namespace

namespace {
void check_not_a_folder(const std::string& path, const char* flag) {
  std::error_code ec;
  TFM_CHECK(!std::filesystem::is_directory(path, ec), "cannot read ", flag, " '", path, "': it is a folder, not a file");
}
}  // namespace

void open_input(std::ifstream& file, const std::string& path, const char* flag) {
  check_not_a_folder(path, flag);
  file.open(path, std::ios::binary);
  TFM_CHECK(file.is_open(), "cannot read ", flag, " '", path, "': ", std::strerror(errno));
}

int open_input_fd(const std::string& path, const char* flag) {
  check_not_a_folder(path, flag);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  TFM_CHECK(fd >= 0, "cannot read ", flag, " '", path, "': ", std::strerror(errno));
  return fd;
}

void check_stdin() {
  struct stat st {};
  TFM_CHECK(::fstat(0, &st) != 0 || !S_ISDIR(st.st_mode), "standard input is a folder, not a text file");
}

void check_stdout() {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;  // the failed write's reason, when fflush itself failed
  if (!flushed || std::ferror(stdout)) fail(err);
}

void close_stdout() {
  check_stdout();
  errno = 0;
  if (std::fclose(stdout) != 0) fail(errno);
}

void check_stream(std::ostream& out, const std::string& what) {
  int err = errno;  // the reason of a write that has just failed, if the caller checks right after it
  if (out.good()) {
    errno = 0;
    out.flush();
    err = errno;
  }
  TFM_CHECK(out.good(), "cannot write ", what, ": ", err ? std::strerror(err) : "a write to it failed");
}

}  // namespace tfm::cli

namespace tfm::cli {

void check_not_an_input(const std::string& path, const char* flag,
                        std::initializer_list<std::pair<const char*, std::string>> inputs) {
  namespace fs = std::filesystem;
  for (const auto& [input_flag, input] : inputs) {
    if (input.empty()) continue;
    std::error_code ec;
    TFM_CHECK(!fs::equivalent(path, input, ec), flag, " '", path, "' is also ", input_flag, " ('", input,
              "'): writing it would destroy what is read; give another file");
  }
}

}  // namespace tfm::cli
