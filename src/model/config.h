#pragma once
// The model configuration (include/transformer/model_config.h) as the library uses it, and its
// JSON mapping: config files, the checkpoint header, a training's "model" overrides.
#include <nlohmann/json_fwd.hpp>

#include "transformer/model_config.h"

namespace transformer {

// Beside the types, for nlohmann::json's lookup.
void to_json(nlohmann::json& j, const ModelConfig& c);
// Reads the fields present over `c`'s current values; unknown fields are an error naming them.
void from_json(const nlohmann::json& j, ModelConfig& c);

// The configuration as a model file records it: every field, except those added with the model
// family (architecture, max_positions, final_norm, embedding_norm, attention_bias, ffn_bias,
// token_types, mlm_head, norm, rope_theta, rotary_dims, rope_interleaved, gated, kv_heads,
// attention_window, the rotary scaling's rope_scaling and rope_* parameters) and the embedding
// defaults (pooling, normalize_embeddings) and stop_ids where they hold their defaults: an encoder-decoder's file
// stays byte for byte what earlier versions wrote, and those versions still read it.
nlohmann::json model_config_for_file(const ModelConfig& c);

// The fields set, under their ModelConfig names ({} when none is).
void to_json(nlohmann::json& j, const ModelOverrides& o);
// Sets the fields present (the others keep their values), with the checks of ModelConfig's
// from_json: unknown fields and values of the wrong type are errors naming them.
void from_json(const nlohmann::json& j, ModelOverrides& o);

}  // namespace transformer

namespace tfm {

using transformer::ModelConfig;
using transformer::ModelOverrides;
using transformer::model_config_fields;
using transformer::model_preset;
using transformer::parameter_count;

}  // namespace tfm
