// transformer plot RUN: the training and validation loss and the BLEU curve of a run, as SVG.
#include <filesystem>

#include "cli/commands.h"
#include "core/error.h"
#include "train/plot.h"

namespace tfm::cli {

namespace {

Action add_plot(CLI::App& app) {
  struct Options {
    std::string run, output;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("plot", "draw a run's loss and BLEU curves as SVG (RUN/training.svg)");
  cmd->add_option("run", o->run, "run folder (holds metrics.jsonl)")->required();
  cmd->add_option("-o,--output", o->output, "SVG file (default: RUN/training.svg)");
  return [cmd, o] {
    if (!*cmd) return -1;
    namespace fs = std::filesystem;
    const std::string metrics = (fs::path(o->run) / "metrics.jsonl").string();
    TFM_CHECK(fs::exists(metrics), "no metrics in '", o->run, "': '", metrics, "' does not exist");
    const std::string out = o->output.empty() ? (fs::path(o->run) / "training.svg").string() : o->output;
    TFM_CHECK(write_training_plot(MetricsLog(metrics), out), "'", metrics, "' holds no records yet");
    std::printf("%s\n", out.c_str());
    return 0;
  };
}

}  // namespace

static const Command kCommand(55, add_plot);

}  // namespace tfm::cli
