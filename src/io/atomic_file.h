#pragma once
// Files written atomically: the bytes go to a temporary file in the same folder, which is flushed
// to disk (fsync) and then renamed over the final name, and the folder is synced. A crash at any
// moment leaves either the old file or the complete new one under the final name, never a torn one.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace tfm {

// Calls write(out) on a stream to the temporary file, then commits it as `path`. On any error
// (the callback's, a full disk, a failed rename) the temporary file is removed and tfm::Error
// thrown with the path and the system's reason. A path that names a device or a pipe (/dev/null,
// /dev/stdout) is written in place instead; one that names a folder is an error.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);

// Removes the temporary files that write_file_atomic leaves in `dir` when its process is killed
// mid-write (".NAME.tmp-XXXXXX"); returns their names. Only for a folder no other process is
// writing to (a training's run folder, under its lock).
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

// The whole file as bytes; throws tfm::Error naming the path and the reason.
std::string read_file(const std::string& path);

}  // namespace tfm
