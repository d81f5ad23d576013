#pragma once
// What every command's flags share: a flag given more than once takes its last value, --help in
// plain words (choices as {a, b}, defaults as "(default: x)"), and a parse error worded as the
// project's errors are, with the nearest flag suggested for an unknown one.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace tfm::cli {

// The help formatter of every command: set on the app before its commands are added (they take
// their parent's).
std::shared_ptr<CLI::Formatter> plain_help_formatter();

// Once every command is added: each single-value flag takes its last value when given more than
// once (as argparse does, for wrapper scripts that append an override), and each command's help
// says so.
void take_last_values(CLI::App& app);

// The flag of `command` nearest to `unknown` (both with their dashes) by edit distance, or "" when
// none is near enough to be a typo of it.
std::string nearest_flag(const CLI::App& command, const std::string& unknown);

// A parse error's message, without CLI11's wording where the project has its own: an unknown
// command names the commands, an unknown flag names the nearest one ("did you mean --max-steps?").
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv);

}  // namespace tfm::cli
