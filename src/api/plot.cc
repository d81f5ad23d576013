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
  TFM_CHECK(tfm::write_training_plot(tfm::MetricsLog(metrics), out), "'", metrics, "' holds no records yet");
  return out;
}

}  // namespace transformer
