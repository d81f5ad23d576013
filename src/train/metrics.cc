#include "train/metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/json_text.h"
#include "io/atomic_file.h"

namespace tfm {

void MetricsLog::append(const nlohmann::json& record) const {
  // One write of the whole line, checked: a full disk is an error, not a lost record.
  const std::string line = record.dump() + '\n';
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  TFM_CHECK(fd >= 0, "cannot open the metrics file '", path_, "': ", std::strerror(errno));
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int err = errno;
  const bool closed = ::close(fd) == 0;
  TFM_CHECK(n == static_cast<ssize_t>(line.size()), "cannot write to the metrics file '", path_, "': ",
            n < 0 ? std::strerror(err) : cat("only ", n, " of ", line.size(), " bytes written"));
  TFM_CHECK(closed, "cannot close the metrics file '", path_, "': ", std::strerror(errno));
}

std::vector<MetricsLog::Record> MetricsLog::read(int64_t* unreadable) const {
  std::vector<Record> records;
  std::ifstream in(path_);
  std::string line;
  int64_t bad = 0, number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    // A line cut short by a kill or a full disk is skipped, not fatal; one nested too deep to be
    // ours is refused.
    nlohmann::json j = parse_json_or_discarded(line, cat(path_, " line ", number));
    if (!j.is_discarded() && j.is_object()) records.push_back({number, std::move(j)});
    else ++bad;
  }
  if (unreadable) *unreadable = bad;
  return records;
}

int64_t MetricsLog::truncate_after(int64_t step) const {
  if (!std::filesystem::exists(path_)) return 0;
  int64_t unreadable = 0;
  const std::vector<Record> records = read(&unreadable);
  write_file_atomic(path_, [&](std::ostream& out) {
    for (const auto& r : records) {
      const nlohmann::json& s = r.fields["step"];
      if (!s.is_number() || s.get<double>() <= static_cast<double>(step)) out << r.fields.dump() << '\n';
    }
  });
  return unreadable;
}

}  // namespace tfm
