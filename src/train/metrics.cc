#include "train/metrics.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/atomic_file.h"

namespace tfm {

void MetricsLog::append(const nlohmann::json& record) const {
  std::ofstream out(path_, std::ios::app);
  TFM_CHECK(out, "cannot open the metrics file '", path_, "'");
  out << record.dump() << '\n';
  out.flush();
}

std::vector<nlohmann::json> MetricsLog::read() const {
  std::vector<nlohmann::json> records;
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    // A line cut short by a kill is skipped, not fatal.
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) records.push_back(std::move(j));
  }
  return records;
}

void MetricsLog::truncate_after(int64_t step) const {
  if (!std::filesystem::exists(path_)) return;
  const std::vector<nlohmann::json> records = read();
  write_file_atomic(path_, [&](std::ostream& out) {
    for (const auto& r : records)
      if (r.value("step", int64_t{0}) <= step) out << r.dump() << '\n';
  });
}

}  // namespace tfm
