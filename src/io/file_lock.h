#pragma once
// An exclusive lock on a file (flock), held for an object's lifetime: a training holds its run
// folder's lock file for the whole run, so that a second training into the same folder fails at
// once instead of mixing the two runs' files. The holder writes its process id into the file, for
// the message the next one gets. The kernel drops the lock when the holder exits, however it exits
// (SIGKILL included): a lock file left behind is never stale.
#include <sys/types.h>

#include <string>
#include <utility>

#include "core/error.h"

namespace tfm {

class FileLock {
 public:
  // Creates `path` if needed and locks it without waiting; throws FileLock::Held naming the file and
  // the holder's process id when another process holds it, tfm::Error (with the system's reason)
  // when the file cannot be made or locked at all (a folder that is not writable, say).
  explicit FileLock(const std::string& path);
  struct Held : Error {
    using Error::Error;
  };
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
  std::pair<dev_t, ino_t> id_{0, 0};  // the file's device and inode, while held
};

}  // namespace tfm
