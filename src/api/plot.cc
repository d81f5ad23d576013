#include <filesystem>

#include "core/error.h"
#include "train/metrics.h"
#include "train/plot.h"
#include "transformer/trainer.h"

namespace transformer {

std::string plot_training(const std::string& run_dir, const std::string& output) {
  namespace fs = std::filesystem;
  const std::string metrics = (fs::path(run_dir) / "metrics.jsonl").string();
  TFM_CHECK(fs::exists(metrics), "no metrics in '", run_dir, "': '", metrics, "' does not exist");
  const std::string out = output.empty() ? (fs::path(run_dir) / "training.svg").string() : output;
  const tfm::MetricsLog log(metrics);
  if (!tfm::write_training_plot(log, out)) {
    int64_t unreadable = 0;
    const auto records = log.read(&unreadable);
    TFM_CHECK(!records.empty() || unreadable == 0, "'", metrics, "' has ", unreadable,
              " lines and none is a metrics record (a JSON object per line; NaN is not JSON)");
    TFM_CHECK(!records.empty(), "'", metrics, "' holds no records yet");
    throw tfm::Error(tfm::cat("'", metrics, "' holds ", records.size(),
                              " records but no loss or validation values to draw (loss, valid_loss, valid_bleu, "
                              "valid_exact)"));
  }
  return out;
}

}  // namespace transformer
