#pragma once
// The `transformer` command's subcommands. Each registers its options on the app and returns the
// action to run after parsing.
#include <functional>

#include <CLI/CLI.hpp>

namespace tfm::cli {

using Action = std::function<int()>;

Action add_init(CLI::App& app);
Action add_info(CLI::App& app);

}  // namespace tfm::cli
