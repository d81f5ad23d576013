// transformer plot RUN: the training and validation loss and the BLEU curve of a run, as SVG.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/streams.h"
#include "transformer/trainer.h"

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
    if (!o->output.empty())
      check_not_an_input(o->output, "-o", {{"the run's metrics", (std::filesystem::path(o->run) / "metrics.jsonl").string()}});
    std::printf("%s\n", transformer::plot_training(o->run, o->output).c_str());
    return 0;
  };
}

}  // namespace

static const Command kCommand(55, add_plot);

}  // namespace tfm::cli
