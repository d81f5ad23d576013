#pragma once
// Training metrics as JSON lines (RUN/metrics.jsonl): one object per record, e.g.
//   {"step": 100, "epoch": 0, "loss": 5.12, "lr": 1.2e-4, "tokens_per_s": 5321, "elapsed_s": 61.2}
//   {"step": 1000, "valid_loss": 2.31, "valid_ppl": 10.1, "valid_bleu": 21.4, "valid_exact": 0.12}
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tfm {

class MetricsLog {
 public:
  explicit MetricsLog(std::string path) : path_(std::move(path)) {}
  // Appends one record as one line in one write; a failed or short write throws tfm::Error naming
  // the file and the reason (a full disk stops the training, which saves what it can).
  void append(const nlohmann::json& record) const;
  // Keeps only records with step ≤ `step` (a resumed run rewrites what came after its checkpoint)
  // and drops lines that are not JSON records (cut by a kill or a full disk); returns how many.
  int64_t truncate_after(int64_t step) const;
  // The records, each with its line number (from 1); lines that are not JSON records are skipped
  // and counted in *unreadable.
  struct Record {
    int64_t line;
    nlohmann::json fields;
  };
  std::vector<Record> read(int64_t* unreadable = nullptr) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tfm
