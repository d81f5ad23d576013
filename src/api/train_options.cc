#include <nlohmann/json.hpp>

#include "core/error.h"
#include "train/options.h"
#include "transformer/train_options.h"

namespace transformer {

TrainOptions train_options_from_json(const std::string& json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(tfm::cat("training options: not valid JSON: ", e.what()));
  }
  TFM_CHECK(j.is_object(), "training options: expected a JSON object, got ", j.dump());
  TrainOptions o;
  from_json(j, o);
  return o;
}

std::string train_options_to_json(const TrainOptions& options) {
  nlohmann::json j;
  to_json(j, options);
  return j.dump();
}

}  // namespace transformer
