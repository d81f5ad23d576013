#include "io/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "core/error.h"

namespace tfm {

namespace {
// The files this process holds locks on, by device and inode: a second lock that fails on one of
// them is this process's own (comparing pid text would also match another container's process).
std::mutex held_mutex;
std::set<std::pair<dev_t, ino_t>>& held_here() {
  static std::set<std::pair<dev_t, ino_t>> held;
  return held;
}
std::pair<dev_t, ino_t> identity(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? std::pair<dev_t, ino_t>{st.st_dev, st.st_ino} : std::pair<dev_t, ino_t>{0, 0};
}
}  // namespace

FileLock::FileLock(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  TFM_CHECK(fd_ >= 0, "cannot open the lock file '", path, "': ", std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    bool mine = false;
    {
      const std::lock_guard<std::mutex> lock(held_mutex);
      mine = held_here().count(identity(fd_)) > 0;
    }
    ::close(fd_);
    fd_ = -1;
    const std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("unknown");
    if (err == EWOULDBLOCK && mine)  // a second Trainer in one program
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
  id_ = identity(fd_);
  const std::lock_guard<std::mutex> lock(held_mutex);
  held_here().insert(id_);
}

FileLock::~FileLock() {
  if (fd_ < 0) return;
  {
    const std::lock_guard<std::mutex> lock(held_mutex);
    held_here().erase(id_);
  }
  ::close(fd_);  // closing releases the lock
}

}  // namespace tfm
