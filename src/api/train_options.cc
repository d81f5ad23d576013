#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_text.h"
#include "train/options.h"
#include "transformer/train_options.h"

namespace transformer {

TrainOptions train_options_from_json(const std::string& json) {
  const nlohmann::json j = tfm::parse_json(json, "training options");
  TFM_CHECK(j.is_object(), "training options: expected a JSON object, got ", tfm::json_quote(j));
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
