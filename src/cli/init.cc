// transformer init: writes a model with freshly initialised parameters (a preset plus overrides).
#include "cli/commands.h"
#include "cli/model_flags.h"
#include "transformer/model.h"

namespace tfm::cli {

namespace {
Action add_init(CLI::App& app) {
  struct Options {
    ModelFlags model;
    uint64_t seed = 1;
    std::string output;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("init", "write a randomly initialised model (for tests and benchmarks)");
  o->model.add_to(*cmd);
  cmd->add_option("--seed", o->seed, "random seed of the initialisation")->capture_default_str();
  cmd->add_option("-o,--output", o->output, "model file to write (.safetensors)")->required();
  return [cmd, o] {
    if (!*cmd) return -1;
    const int64_t parameters = transformer::init_model(o->model.resolve(), o->seed, o->output);
    std::printf("wrote %s: %lld parameters\n", o->output.c_str(), static_cast<long long>(parameters));
    return 0;
  };
}

}  // namespace

static const Command kCommand(10, add_init);

}  // namespace tfm::cli
