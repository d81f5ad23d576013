// transformer average CKPT... -o OUT: the element-wise mean of the parameters of several checkpoints
// (the paper averaged the last 5, or 20 for the big model, §6.1). Checkpoints of different
// configurations are refused.
#include "cli/commands.h"
#include "cli/model_io.h"
#include "transformer/model.h"

namespace tfm::cli {

namespace {

Action add_average(CLI::App& app) {
  struct Options {
    std::vector<std::string> inputs;
    std::string output;
    bool no_verify = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("average", "average the parameters of several checkpoints into one model");
  cmd->add_option("checkpoints", o->inputs, "model or checkpoint files (.safetensors)")->required();
  cmd->add_option("-o,--output", o->output, "the averaged model to write")->required();
  add_no_verify_flag(*cmd, o->no_verify);
  return [cmd, o] {
    if (!*cmd) return -1;
    print_notes(transformer::average_checkpoints(o->inputs, o->output, !o->no_verify));
    std::printf("averaged %zu checkpoints into %s\n", o->inputs.size(), o->output.c_str());
    return 0;
  };
}

}  // namespace

static const Command kCommand(50, add_average);

}  // namespace tfm::cli
