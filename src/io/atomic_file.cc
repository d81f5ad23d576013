#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace tfm {

namespace {
std::string reason() { return std::strerror(errno); }

// A streambuf over a file descriptor, so that fsync can follow the last write.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd), buf_(1 << 16) { setp(buf_.data(), buf_.data() + buf_.size()); }
  bool failed() const { return failed_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!flush_buffer()) return traits_type::eof();
    if (ch != traits_type::eof()) {
      *pptr() = static_cast<char>(ch);
      pbump(1);
    }
    return ch;
  }
  int sync() override { return flush_buffer() ? 0 : -1; }

 private:
  bool flush_buffer() {
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0) {
        if (errno == EINTR) continue;
        failed_ = true;
        return false;
      }
      p += n;
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return true;
  }
  int fd_;
  std::vector<char> buf_;
  bool failed_ = false;
};
}  // namespace

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  TFM_CHECK(!path.empty(), "the output file's name is empty: give a path");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    TFM_CHECK(!S_ISDIR(st.st_mode), "cannot write '", path, "': it is a folder; give a file name");
    if (!S_ISREG(st.st_mode)) {
      // A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written in place: a temporary file
      // renamed over it would replace the device itself (as root) with a plain file.
      const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
      TFM_CHECK(fd >= 0, "cannot open '", path, "' for writing: ", reason());
      try {
        FdBuf buf(fd);
        std::ostream out(&buf);
        write(out);
        out.flush();
        TFM_CHECK(!buf.failed() && out.good(), "cannot write '", path, "': ", reason());
      } catch (...) {
        ::close(fd);
        throw;
      }
      TFM_CHECK(::close(fd) == 0, "cannot close '", path, "': ", reason());
      return;
    }
  }
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp = (dir / cat(".", target.filename().string(), ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  TFM_CHECK(fd >= 0, "cannot create a temporary file beside '", path, "': ", reason());
  try {
    // mkstemp makes the file private (0600); give it the permissions a plainly created file gets.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    TFM_CHECK(::fchmod(fd, 0666 & ~mask) == 0, "cannot set the permissions of '", tmp, "': ", reason());
    FdBuf buf(fd);
    std::ostream out(&buf);
    write(out);
    out.flush();
    TFM_CHECK(!buf.failed() && out.good(), "cannot write '", tmp, "': ", reason());
    TFM_CHECK(::fsync(fd) == 0, "cannot flush '", tmp, "' to disk: ", reason());
    TFM_CHECK(::close(fd) == 0, "cannot close '", tmp, "': ", reason());
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = reason();
    ::unlink(tmp.c_str());
    throw Error(cat("cannot rename '", tmp, "' to '", path, "': ", why));
  }
  // Make the rename itself durable.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  if (!fs::is_directory(dir)) return removed;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    // ".NAME.tmp-" and mkstemp's six characters
    const size_t tag = n.rfind(".tmp-");
    if (n.size() < 2 || n[0] != '.' || tag == std::string::npos || tag == 0 || n.size() != tag + 11) continue;
    std::error_code ec;
    if (e.is_regular_file(ec) && fs::remove(e.path(), ec)) removed.push_back(n);
  }
  return removed;
}

std::string read_file(const std::string& path) {
  TFM_CHECK(!std::filesystem::is_directory(path), "'", path, "' is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  TFM_CHECK(in, "cannot open '", path, "': ", reason());
  std::ostringstream s;
  s << in.rdbuf();
  TFM_CHECK(!in.bad(), "cannot read '", path, "': ", reason());
  return std::move(s).str();
}

}  // namespace tfm
