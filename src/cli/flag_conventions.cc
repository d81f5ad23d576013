// The conventions every command's flags follow: last value wins, plain help, worded parse errors.
#include "cli/flag_conventions.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace tfm::cli {

namespace {

// CLI11's help with its internals left out: names without the "{false}" of a negation flag, type
// names without their validators' descriptions ("ENUM:value in {a->0,b->1} OR {0,1}"), and the
// default at the end of the description as "(default: x)".
class PlainFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    if (positional) return opt->get_name(true, false);
    std::string names;
    for (const std::string& s : opt->get_snames()) names += (names.empty() ? "-" : ", -") + s;
    for (const std::string& l : opt->get_lnames()) names += (names.empty() ? "--" : ", --") + l;
    return names.empty() ? opt->get_name(true, false) : names;
  }

  std::string make_option_opts(const CLI::Option* opt) const override {
    if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
    std::string out;
    if (opt->get_type_size() != 0) {
      const std::string type = opt->get_type_name();
      if (const std::string plain = type.substr(0, type.find(':')); !plain.empty()) out += " " + plain;
      if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
      if (opt->get_required()) out += " (required)";
    }
    for (const CLI::Option* other : opt->get_excludes()) out += " (not with " + other->get_name() + ")";
    for (const CLI::Option* other : opt->get_needs()) out += " (needs " + other->get_name() + ")";
    return out;
  }

  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string desc = opt->get_description();
    if (opt->get_type_size() != 0 && !opt->get_default_str().empty())
      desc += " (default: " + opt->get_default_str() + ")";
    return desc;
  }
};

constexpr const char* kLastWins =
    "A flag given more than once takes its last value (--beam 2 --beam 4: 4); those marked ... take each one.";

void take_last_values_of(CLI::App& app) {
  for (CLI::Option* opt : app.get_options())
    if (!opt->get_positional() && opt->get_items_expected_max() == 1 &&
        opt->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw)
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) take_last_values_of(*sub);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

const CLI::App* named_command(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->check_name(name)) return sub;
  return nullptr;
}

// "unknown flag --max-step for train; did you mean --max-steps?" for the first --flag of argv that
// the command given has not; "" when every one is known.
std::string unknown_flag_message(const CLI::App& app, int argc, char** argv) {
  const CLI::App* command = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (command == nullptr) {
      if (!arg.starts_with("-")) command = named_command(app, arg);
      continue;
    }
    if (!arg.starts_with("--") || arg == "--") continue;
    const std::string flag = arg.substr(0, arg.find('='));
    if (command->get_option_no_throw(flag) != nullptr) continue;
    const std::string near = nearest_flag(*command, flag);
    return "unknown flag " + flag + " for " + command->get_name() +
           (near.empty() ? " (" + command->get_name() + " --help lists them)" : "; did you mean " + near + "?");
  }
  return "";
}

}  // namespace

std::shared_ptr<CLI::Formatter> plain_help_formatter() { return std::make_shared<PlainFormatter>(); }

void take_last_values(CLI::App& app) {
  take_last_values_of(app);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    const std::string footer = sub->get_footer();
    sub->footer(footer.empty() ? kLastWins : footer + "\n" + kLastWins);
  }
}

std::string nearest_flag(const CLI::App& command, const std::string& unknown) {
  const size_t start = unknown.find_first_not_of('-');
  const std::string typed = start == std::string::npos ? std::string() : unknown.substr(start);
  // A typo: at most a third of the name's letters wrong (one for short names), three for long ones.
  size_t best = std::min<size_t>(3, std::max<size_t>(1, typed.size() / 3)) + 1;
  std::string nearest;
  for (const CLI::Option* opt : command.get_options())
    for (const std::string& name : opt->get_lnames())
      if (const size_t d = edit_distance(typed, name); d < best) {
        best = d;
        nearest = "--" + name;
      }
  return nearest;
}

std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  // A first word that names no subcommand: CLI11 says only "A subcommand is required".
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && argc > 1 && argv[1][0] != '-' &&
      app.get_subcommands().empty()) {
    std::string known;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      known += (known.empty() ? "" : ", ") + sub->get_name();
    return std::string("unknown command '") + argv[1] + "' (the commands: " + known + ")";
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr)
    if (std::string unknown = unknown_flag_message(app, argc, argv); !unknown.empty()) return unknown;
  return e.what();
}

}  // namespace tfm::cli
