#pragma once
// The `transformer` command's subcommands. Each lives in its own src/cli/<name>.cc and registers
// itself with a static Command object:
//   static const Command kInfo(20, add_info);
// where add_info registers the subcommand's options on the app and returns the action to run after
// parsing (which returns -1 when its subcommand was not the one given). `order` sorts --help.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tfm::cli {

using Action = std::function<int()>;
using AddCommand = Action (*)(CLI::App& app);

struct Command {
  Command(int order, AddCommand add);
};

// Every registered command, sorted by order.
std::vector<AddCommand> registered_commands();

// An option's check that its number is >= 0, in the project's words ("must be a number >= 0, got -1"; CLI11's
// NonNegativeNumber prints its range up to the largest double, 309 digits).
inline CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(value, v) || !(v >= 0)) return "must be a number >= 0, got " + value;
        return {};
      },
      "NONNEGATIVE");
}

// A --threads option's check: an integer in [0, 1024] (0: all cores), checked before it is narrowed
// to the thread count's type (3000000000 once became -1294967296, and 4294967297 one thread).
inline CLI::Validator thread_count() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        int64_t v = 0;
        if (!CLI::detail::lexical_cast(value, v) || v < 0 || v > 1024)
          return "must be an integer in [0, 1024] (0: all cores), got " + value;
        return {};
      },
      "THREADS");
}

}  // namespace tfm::cli
