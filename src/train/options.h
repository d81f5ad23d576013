#pragma once
// The training options (include/transformer/train_options.h) as the library uses them: their JSON
// form (config files, RUN/config.json, the options a checkpoint records), the help of each field,
// and the learning-rate schedule.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "transformer/train_options.h"

namespace transformer {

// Beside the type, for nlohmann::json's lookup. Every field under its own name; vocab_options as
// "vocab_size" and "vocab_type"; the model overrides as the object "model".
void to_json(nlohmann::json& j, const TrainOptions& o);
// Reads the fields present over `o`'s values; "model" is an object of ModelConfig fields applied
// over the preset (and over the overrides already set). Unknown fields are an error naming them.
void from_json(const nlohmann::json& j, TrainOptions& o);

}  // namespace transformer

namespace tfm {

using transformer::TrainOptions;

// One line describing a field of TrainOptions (its JSON name), for `train --help`; "" if unknown.
const char* train_option_help(std::string_view field);

// The architecture of the model the options make (the preset's, or the override's).
std::string model_architecture(const TrainOptions& o);
// Whether the options train a language model (decoder-only or encoder-only) on monolingual text.
bool language_model(const TrainOptions& o);

// lr at `step` (counted from 1) by the paper's schedule.
double learning_rate(const TrainOptions& o, int64_t d_model, int64_t step);

}  // namespace tfm
