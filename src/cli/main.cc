// transformer: train encoder-decoder Transformer models and translate with them.
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app("transformer: the Transformer of \"Attention Is All You Need\" in C++", "transformer");
  app.require_subcommand(1);
  const std::vector<tfm::cli::Action> actions = {tfm::cli::add_init(app), tfm::cli::add_info(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const auto& action : actions) {
      const int rc = action();
      if (rc >= 0) return rc;
    }
  } catch (const tfm::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
