#include "cli/model_flags.h"

#include "core/error.h"
#include "core/json_text.h"

namespace tfm::cli {

void ModelFlags::add_to(CLI::App& app) {
  app.add_option("--preset", preset_, "model preset: tiny, small, base, big")->capture_default_str();
  const ModelConfig example;
  const nlohmann::json fields = example;
  for (const std::string& field : model_config_fields()) {
    std::string flag = "--" + field;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (fields[field].is_boolean()) flag_options_[field] = app.add_flag(flag, flags_[field], "set " + field + " (or =false)");
    else app.add_option(flag, values_[field], "override the preset's " + field)->type_name("VALUE");
  }
  app.add_option("--layers", layers_, "encoder and decoder depth at once")->type_name("N");
}

ModelConfig ModelFlags::resolve() const {
  ModelConfig c = model_preset(preset_);
  nlohmann::json overrides = nlohmann::json::object();
  auto parse = [](std::string field, const std::string& text) {
    std::replace(field.begin(), field.end(), '_', '-');
    nlohmann::json v = parse_json_or_discarded(text, "--" + field);
    TFM_CHECK(!v.is_discarded(), "--", field, ": '", printable(text), "' is not a number or true/false");
    return v;
  };
  if (!layers_.empty()) overrides["encoder_layers"] = overrides["decoder_layers"] = parse("layers", layers_);
  const nlohmann::json fields = ModelConfig();
  for (const auto& [field, text] : values_)
    if (!text.empty()) overrides[field] = fields[field].is_string() ? nlohmann::json(text) : parse(field, text);
  for (const auto& [field, option] : flag_options_)
    if (option->count() > 0) overrides[field] = flags_.at(field);
  from_json(overrides, c);
  c.validate();
  return c;
}

}  // namespace tfm::cli
