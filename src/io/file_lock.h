#pragma once
// An exclusive lock on a file (flock), held for an object's lifetime: a training holds its run
// folder's lock file for the whole run, so that a second training into the same folder fails at
// once instead of mixing the two runs' files. The holder writes its process id into the file, for
// the message the next one gets. The kernel drops the lock when the holder exits, however it exits
// (SIGKILL included): a lock file left behind is never stale.
#include <string>

namespace tfm {

class FileLock {
 public:
  // Creates `path` if needed and locks it without waiting; throws tfm::Error naming the file and the
  // holder's process id when another process holds it.
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tfm
