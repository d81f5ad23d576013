#include "io/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace tfm {

FileLock::FileLock(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  TFM_CHECK(fd_ >= 0, "cannot open the lock file '", path, "': ", std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    const std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("unknown");
    if (err == EWOULDBLOCK && holder == std::to_string(::getpid()))  // a second Trainer in one program
      throw Held(cat("'", path, "' is locked by this process (pid ", holder,
                     "): another object of this program holds it; end that one first"));
    if (err == EWOULDBLOCK) throw Held(cat("'", path, "' is locked by another process (pid ", holder, ")"));
    throw Error(cat("cannot lock '", path, "': ", std::strerror(err)));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw Error(cat("cannot write the lock file '", path, "': ", std::strerror(err)));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace tfm
