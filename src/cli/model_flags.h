#pragma once
// Model options on the command line: --preset NAME, then one flag per ModelConfig field (the JSON
// name with '-' for '_', e.g. --d-model 256), applied over the preset; --layers N sets both depths.
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "model/config.h"

namespace tfm::cli {

class ModelFlags {
 public:
  void add_to(CLI::App& app);
  // The preset with the flags' overrides applied, validated; throws naming a bad value.
  ModelConfig resolve() const;

 private:
  std::string preset_ = "base";
  std::map<std::string, std::string> values_;  // field → text given on the command line
  std::string layers_;
  std::map<std::string, bool> flags_;  // boolean fields: --pre-norm, or --pre-norm=false
  std::map<std::string, CLI::Option*> flag_options_;  // to tell "given as false" from "not given"
};

}  // namespace tfm::cli
