// transformer: train encoder-decoder Transformer models and translate with them.
#include <algorithm>
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "cli/flag_conventions.h"
#include "cli/streams.h"
#include "core/error.h"
#include "core/memory.h"
#include "ops/cpu/isa.h"

namespace tfm::cli {

namespace {
std::vector<std::pair<int, AddCommand>>& registry() {
  static std::vector<std::pair<int, AddCommand>> commands;
  return commands;
}
}  // namespace

Command::Command(int order, AddCommand add) { registry().emplace_back(order, add); }

std::vector<AddCommand> registered_commands() {
  auto sorted = registry();
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<AddCommand> out;
  for (const auto& [order, add] : sorted) out.push_back(add);
  return out;
}

}  // namespace tfm::cli

int main(int argc, char** argv) {
  tfm::keep_freed_memory_for_reuse();
  CLI::App app("transformer: the Transformer of \"Attention Is All You Need\" in C++", "transformer");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("transformer ") + TFM_VERSION);
  app.formatter(tfm::cli::plain_help_formatter());  // before the commands: each takes its parent's
  std::vector<tfm::cli::Action> actions;
  for (tfm::cli::AddCommand add : tfm::cli::registered_commands()) actions.push_back(add(app));
  tfm::cli::take_last_values(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: status 0
    // A wrong flag or value, worded and ended like every other error: "error: ...", status 1.
    std::fprintf(stderr, "error: %s\nRun with --help for more information.\n",
                 tfm::cli::parse_error_message(app, e, argc, argv).c_str());
    return 1;
  }
  try {
    tfm::cpu::isa();  // a wrong TFM_CPU_ISA is an error before any work, not in the middle of it
    for (const auto& action : actions) {
      const int rc = action();
      if (rc < 0) continue;
      tfm::cli::close_stdout();  // results that could not be written are an error, not exit 0
      return rc;
    }
  } catch (const tfm::cli::BrokenPipe&) {
    return 141;  // the reader went away: quietly, as SIGPIPE would have ended us
  } catch (const tfm::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
