// transformer train: from parallel text (or a language model's monolingual text) to a model (include/transformer/train_options.h documents
// every option). The training itself is transformer::Trainer's; this command reads the options from
// a config file and flags, draws the progress on stderr and turns Ctrl-C and SIGTERM into a stop
// request.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "core/json_text.h"
#include "dist/communicator.h"
#include "io/atomic_file.h"
#include "train/options.h"
#include "transformer/trainer.h"

namespace tfm::cli {

namespace {

std::string hms(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

// Progress: a line updated in place on a terminal, plain lines (one per log step) otherwise.
class ProgressLine {
 public:
  ProgressLine() : tty_(::isatty(STDERR_FILENO) == 1) {}
  void update(const transformer::Progress& p) {
    const std::string eta = p.eta_s >= 0 ? " | ETA " + hms(p.eta_s) : "";
    char line[256];
    std::snprintf(line, sizeof line, "step %lld | epoch %lld | %.0f tok/s | loss %.4f | lr %.3g | %s%s",
                  static_cast<long long>(p.step), static_cast<long long>(p.epoch), p.tokens_per_s, p.loss,
                  p.learning_rate, hms(p.elapsed_s).c_str(), eta.c_str());
    if (tty_) {
      std::fprintf(stderr, "\r%-100s", line);
      if (p.log_step) std::fprintf(stderr, "\n");
    } else if (p.log_step) {
      std::fprintf(stderr, "%s\n", line);
    }
    std::fflush(stderr);
  }
  void message(const std::string& line) {
    std::fprintf(stderr, "%s%s\n", tty_ ? "\r\033[K" : "", line.c_str());
    std::fflush(stderr);
  }

 private:
  bool tty_;
};

// Ctrl-C / SIGTERM / SIGUSR1: the training finishes the current step, saves a checkpoint and stops.
// (Under mpirun, SIGUSR1 is the one to send: Open MPI's mpirun forwards it to every rank, while on
// SIGINT or SIGTERM it ends the job at once.)
std::atomic<transformer::Trainer*> g_trainer{nullptr};
std::atomic<int> g_stop_signal{0};  // the first signal that stopped the run
void on_signal(int signal) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, signal);
  if (transformer::Trainer* t = g_trainer.load()) t->request_stop();
}

// The handlers for one training's run; the previous ones come back after it, however it ends. A
// signal ignored on entry stays ignored (a job started in the background by a script ignores
// SIGINT, so that Ctrl-C in the terminal stops the script, not the job).
class StopOnSignals {
 public:
  explicit StopOnSignals(transformer::Trainer& trainer) {
    g_trainer = &trainer;
    g_stop_signal = 0;
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (size_t i = 0; i < kSignals.size(); ++i) {
      sigaction(kSignals[i], nullptr, &old_[i]);
      if (old_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &action, nullptr);
    }
  }
  ~StopOnSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
    g_trainer = nullptr;
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGUSR1};
  std::array<struct sigaction, 3> old_{};
};

// A job started in the background by a script ignores SIGINT, and StopOnSignals leaves it so: say
// at the start how to stop this one. (Under an MPI launcher, SIGUSR1 is the one: see above.)
void note_ignored_sigint(ProgressLine& progress) {
  struct sigaction current {};
  if (sigaction(SIGINT, nullptr, &current) != 0 || current.sa_handler != SIG_IGN) return;
  if (dist::started_by_launcher()) return;
  progress.message(cat("note: SIGINT is ignored (as in a job a script started in the background): Ctrl-C and "
                       "kill -INT do not stop this training; SIGTERM does, after saving a checkpoint (kill ",
                       ::getpid(), ")"));
}

std::string dashed(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

// What train's command line gives: texts by field, read over the config file's options.
struct TrainFlags {
  std::string config;
  std::map<std::string, std::string> train;  // field → text from the command line
  std::map<std::string, std::string> model;
  std::string layers;
  std::map<std::string, bool> flags;  // boolean options: --resume, or --resume=false
  std::map<std::string, CLI::Option*> flag_options;  // to tell "given as false" from "not given"
};

// train --help's groups, each with its fields in the order listed; a field not listed (none yet)
// goes to "Other".
const std::vector<std::pair<const char*, std::vector<std::string>>>& train_flag_groups() {
  static const std::vector<std::pair<const char*, std::vector<std::string>>> kGroups = {
      {"Data", {"train_source", "train_target", "valid_source", "valid_target", "train_text", "valid_text",
                "mask_fraction", "vocab", "vocab_size", "vocab_type", "max_tokens", "max_chars"}},
      {"Model", {"preset"}},
      {"Optimization", {"batch_tokens", "accumulate", "lr_factor", "warmup_steps", "adam_beta1", "adam_beta2",
                        "adam_eps", "label_smoothing", "clip_norm", "bf16", "max_steps", "max_epochs", "max_seconds",
                        "seed", "device", "threads", "allreduce_bucket_mb"}},
      {"Validation and checkpoints", {"valid_every", "best_metric", "patience", "valid_beam", "valid_max_sentences",
                                      "save_every", "keep_last", "resume"}},
      {"Output", {"run_dir", "log_every"}},
  };
  return kGroups;
}

// A default as a person writes it: base, not "base"; none for an empty text.
std::string plain_default(const nlohmann::json& value) {
  if (!value.is_string()) return value.dump();
  const std::string text = value.get<std::string>();
  return text.empty() ? "none" : text;
}

void add_train_flag(CLI::App& cmd, TrainFlags& o, const std::string& field, const nlohmann::json& value,
                    const std::string& group) {
  static const std::map<std::string, std::string> kChoices = {
      {"preset", "{tiny, small, base, big}"}, {"vocab_type", "{bpe, unigram}"}, {"best_metric", "{bleu, loss}"}};
  std::string help = train_option_help(field);
  if (help.find("(required)") == std::string::npos) help += cat(" (default: ", plain_default(value), ")");
  const auto choices = kChoices.find(field);
  if (value.is_boolean())
    o.flag_options[field] = cmd.add_flag("--" + dashed(field), o.flags[field], help)->group(group);
  else
    cmd.add_option("--" + dashed(field), o.train[field], help)
        ->type_name(choices == kChoices.end() ? "VALUE" : choices->second)
        ->group(group);
}

// The model's flags: one per ModelConfig field, and --layers.
void add_model_flags(CLI::App& cmd, TrainFlags& o) {
  // The vocabulary fixes the model's vocab_size and special ids, so they have no flags here.
  const std::set<std::string> from_vocab = {"vocab_size", "pad_id", "unk_id", "bos_id", "eos_id"};
  const ModelConfig model_example;
  const nlohmann::json model_fields = model_example;
  for (const std::string& field : model_config_fields())
    if (from_vocab.count(field)) continue;
    else if (model_fields[field].is_boolean())
      o.flag_options["model." + field] =
          cmd.add_flag("--" + dashed(field), o.flags["model." + field], "model: " + field + " (or =false)")
              ->group("Model");
    else
      cmd.add_option("--" + dashed(field), o.model[field], "model: override the preset's " + field)
          ->type_name("VALUE")
          ->group("Model");
  cmd.add_option("--layers", o.layers, "model: encoder and decoder depth at once")->type_name("N")->group("Model");
}

// One flag per TrainOptions field (its default in the help) and per ModelConfig field, then
// --layers, in train_flag_groups()'s groups.
void add_train_flags(CLI::App& cmd, TrainFlags& o, const nlohmann::json& defaults) {
  std::set<std::string> added = {"model"};
  for (const auto& [group, fields] : train_flag_groups()) {
    for (const std::string& field : fields)
      if (defaults.contains(field) && added.insert(field).second) add_train_flag(cmd, o, field, defaults[field], group);
    if (std::string(group) == "Model") add_model_flags(cmd, o);
  }
  for (const auto& [field, value] : defaults.items())
    if (added.insert(field).second) add_train_flag(cmd, o, field, value, "Other");
}

// A flag's text is read as JSON for numbers and booleans, as is for strings (`like` is the
// field's default).
nlohmann::json flag_value(const std::string& field, const std::string& text, const nlohmann::json& like) {
  if (like.is_string()) return nlohmann::json(text);
  nlohmann::json v = parse_json_or_discarded(text, cat("--", dashed(field)));
  TFM_CHECK(!v.is_discarded() && !v.is_string() && !v.is_object() && !v.is_array(), "--", dashed(field), ": '",
            text, "' is not a ", like.is_boolean() ? "boolean (true/false)" : "number");
  return v;
}

// The fields the flags set, as a JSON object of options (the model's under "model").
nlohmann::json flag_overrides(const TrainFlags& o, const nlohmann::json& defaults) {
  nlohmann::json overrides = nlohmann::json::object();
  for (const auto& [field, text] : o.train)
    if (!text.empty()) overrides[field] = flag_value(field, text, defaults[field]);
  const ModelConfig default_model;
  const nlohmann::json model_defaults = default_model;
  for (const auto& [field, text] : o.model)
    if (!text.empty()) overrides["model"][field] = flag_value(field, text, model_defaults[field]);
  for (const auto& [name, option] : o.flag_options) {
    if (option->count() == 0) continue;
    const bool on = o.flags.at(name);
    if (name.starts_with("model.")) overrides["model"][name.substr(6)] = on;
    else overrides[name] = on;
  }
  if (!o.layers.empty())
    overrides["model"]["encoder_layers"] = overrides["model"]["decoder_layers"] =
        flag_value("layers", o.layers, model_defaults["encoder_layers"]);
  return overrides;
}

// The options: the defaults, then the config file's, then the flags'.
TrainOptions train_options(const TrainFlags& o, const nlohmann::json& defaults) {
  TrainOptions options;
  if (!o.config.empty()) {
    from_json(parse_json(read_file(o.config), o.config), options);
  }
  from_json(flag_overrides(o, defaults), options);
  return options;
}

// Trains, drawing the progress; prints the final model's path. A run stopped by a signal says how
// to go on and ends as the signal asks.
int run_train(const TrainOptions& options) {
  ProgressLine progress;
  note_ignored_sigint(progress);
  transformer::TrainCallbacks callbacks;
  callbacks.on_message = [&](const std::string& line) { progress.message(line); };
  callbacks.on_progress = [&](const transformer::Progress& p) { progress.update(p); };
  transformer::Trainer trainer(options, std::move(callbacks));
  transformer::TrainResult r;
  {
    const StopOnSignals stop(trainer);
    r = trainer.run();
  }
  if (!r.final_model.empty()) std::printf("%s\n", r.final_model.c_str());  // rank 0 writes it
  if (!r.interrupted) return 0;
  if (!r.final_model.empty())
    progress.message(cat("to go on: transformer train --config '",
                         (std::filesystem::path(options.run_dir) / "config.json").string(), "' --resume"));
  // SIGINT and SIGTERM end the process by the signal once the checkpoint is saved, as the shell
  // expects of a program that Ctrl-C stopped (status 130 or 143; a script running it stops too).
  // SIGUSR1, the stop request that mpirun forwards, and a stop requested otherwise exit with 130.
  std::fflush(stdout);
  std::fflush(stderr);
  if (const int signal = g_stop_signal.load(); signal == SIGINT || signal == SIGTERM) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
  return 130;
}

Action add_train(CLI::App& app) {
  auto o = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand("train", "train a model from parallel text (a language model from monolingual text: --architecture decoder-only or encoder-only, --train-text); under mpirun -np N, data-parallel over N processes (options: docs/training.md)");
  cmd->add_option("--config", o->config, "JSON file of training options; flags override it");
  const TrainOptions default_options;
  const nlohmann::json defaults = default_options;
  add_train_flags(*cmd, *o, defaults);
  return [cmd, o, defaults] {
    if (!*cmd) return -1;
    return run_train(train_options(*o, defaults));
  };
}

}  // namespace

static const Command kCommand(30, add_train);

}  // namespace tfm::cli
