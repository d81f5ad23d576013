// transformer train: from parallel text to a model (train/options.h documents every option).
#include <set>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "train/trainer.h"

namespace tfm::cli {

namespace {

std::string dashed(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

Action add_train(CLI::App& app) {
  struct Options {
    std::string config;
    std::map<std::string, std::string> train;  // field → text from the command line
    std::map<std::string, std::string> model;
    std::string layers;
    std::map<std::string, bool> flags;  // boolean options: --resume, or --resume=false
    std::map<std::string, CLI::Option*> flag_options;  // to tell "given as false" from "not given"
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("train", "train a model from parallel text (options: docs/training.md)");
  cmd->add_option("--config", o->config, "JSON file of training options; flags override it");
  const TrainOptions default_options;
  const nlohmann::json defaults = default_options;
  for (const auto& [field, value] : defaults.items()) {
    if (field == "model") continue;
    const std::string help = cat(train_option_help(field), " (default: ", value.dump(), ")");
    if (value.is_boolean()) o->flag_options[field] = cmd->add_flag("--" + dashed(field), o->flags[field], help);
    else cmd->add_option("--" + dashed(field), o->train[field], help)->type_name("VALUE");
  }
  // The vocabulary fixes the model's vocab_size and special ids, so they have no flags here.
  const std::set<std::string> from_vocab = {"vocab_size", "pad_id", "unk_id", "bos_id", "eos_id"};
  const ModelConfig model_example;
  const nlohmann::json model_fields = model_example;
  for (const std::string& field : model_config_fields())
    if (from_vocab.count(field)) continue;
    else if (model_fields[field].is_boolean())
      o->flag_options["model." + field] =
          cmd->add_flag("--" + dashed(field), o->flags["model." + field], "model: " + field + " (or =false)");
    else cmd->add_option("--" + dashed(field), o->model[field], "model: override the preset's " + field)->type_name("VALUE");
  cmd->add_option("--layers", o->layers, "model: encoder and decoder depth at once")->type_name("N");
  return [cmd, o, defaults] {
    if (!*cmd) return -1;
    TrainOptions options;
    if (!o->config.empty()) {
      nlohmann::json file;
      try {
        file = nlohmann::json::parse(read_file(o->config));
      } catch (const nlohmann::json::exception& e) {
        throw tfm::Error(cat(o->config, ": not valid JSON: ", e.what()));
      }
      from_json(file, options);
    }
    // A flag's text is read as JSON for numbers and booleans, as is for strings.
    auto value_of = [](const std::string& field, const std::string& text, const nlohmann::json& like) {
      if (like.is_string()) return nlohmann::json(text);
      nlohmann::json v = nlohmann::json::parse(text, nullptr, false);
      TFM_CHECK(!v.is_discarded() && !v.is_string() && !v.is_object() && !v.is_array(), "--", dashed(field), ": '",
                text, "' is not a ", like.is_boolean() ? "boolean (true/false)" : "number");
      return v;
    };
    nlohmann::json overrides = nlohmann::json::object();
    for (const auto& [field, text] : o->train)
      if (!text.empty()) overrides[field] = value_of(field, text, defaults[field]);
    const ModelConfig default_model;
    const nlohmann::json model_defaults = default_model;
    for (const auto& [field, text] : o->model)
      if (!text.empty()) overrides["model"][field] = value_of(field, text, model_defaults[field]);
    for (const auto& [name, option] : o->flag_options) {
      if (option->count() == 0) continue;
      const bool on = o->flags.at(name);
      if (name.starts_with("model.")) overrides["model"][name.substr(6)] = on;
      else overrides[name] = on;
    }
    if (!o->layers.empty())
      overrides["model"]["encoder_layers"] = overrides["model"]["decoder_layers"] =
          value_of("layers", o->layers, model_defaults["encoder_layers"]);
    from_json(overrides, options);
    const TrainResult r = train(options);
    std::printf("%s\n", r.final_model.c_str());
    return r.stop_reason == "interrupted" ? 130 : 0;  // as a shell reports Ctrl-C
  };
}

}  // namespace

static const Command kCommand(30, add_train);

}  // namespace tfm::cli
