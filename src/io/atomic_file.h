#pragma once
// Files written atomically: the bytes go to a temporary file in the same folder, which is flushed
// to disk (fsync) and then renamed over the final name, and the folder is synced. A crash at any
// moment leaves either the old file or the complete new one under the final name, never a torn one.
#include <functional>
#include <ostream>
#include <string>

namespace tfm {

// Calls write(out) on a stream to the temporary file, then commits it as `path`. On any error
// (the callback's, a full disk, a failed rename) the temporary file is removed and tfm::Error
// thrown with the path and the system's reason.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);

// The whole file as bytes; throws tfm::Error naming the path and the reason.
std::string read_file(const std::string& path);

}  // namespace tfm
