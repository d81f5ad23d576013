#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_field.h"

namespace transformer {

using tfm::cat;
using tfm::read_json_field;

namespace {
// The sizes: positive, within bounds, heads dividing d_model, at least one layer on each side.
void check_sizes(const ModelConfig& c) {
  TFM_CHECK(c.vocab_size >= 4, "model: vocab_size must be at least 4 (pad, unk, bos, eos), got ", c.vocab_size);
  TFM_CHECK(c.d_model >= 1 && c.d_ff >= 1 && c.heads >= 1, "model: d_model, d_ff and heads must be positive, got ",
            c.d_model, ", ", c.d_ff, ", ", c.heads);
  // Bounds far beyond any real model, so that a corrupt configuration cannot ask for absurd memory.
  TFM_CHECK(c.vocab_size <= 10'000'000 && c.d_model <= 65'536 && c.d_ff <= 1'048'576 && c.heads <= c.d_model &&
                c.encoder_layers <= 1'000 && c.decoder_layers <= 1'000,
            "model: configuration out of range (vocab_size ", c.vocab_size, ", d_model ", c.d_model, ", d_ff ", c.d_ff,
            ", heads ", c.heads, ", layers ", c.encoder_layers, "+", c.decoder_layers, ")");
  TFM_CHECK(c.d_model % c.heads == 0, "model: d_model ", c.d_model, " is not divisible by heads ", c.heads);
  TFM_CHECK(!c.has_encoder() || c.encoder_layers >= 1, "model: encoder_layers must be >= 1 for architecture '",
            c.architecture, "', got ", c.encoder_layers);
  TFM_CHECK(!c.has_decoder() || c.decoder_layers >= 1, "model: decoder_layers must be >= 1 for architecture '",
            c.architecture, "', got ", c.decoder_layers);
}

// Dropout rates in [0, 1) and a positive layer norm epsilon.
void check_rates(const ModelConfig& c) {
  for (double p : {c.dropout, c.embedding_dropout, c.attention_dropout})
    TFM_CHECK(p >= 0 && p < 1, "model: dropout rates must be in [0, 1), got ", p);
  TFM_CHECK(c.layer_norm_eps > 0, "model: layer_norm_eps must be positive, got ", c.layer_norm_eps);
}

// The special tokens inside the vocabulary (pad and bos may be -1, none) and distinct.
void check_special_ids(const ModelConfig& c) {
  for (int32_t id : {c.unk_id, c.eos_id})
    TFM_CHECK(id >= 0 && id < c.vocab_size, "model: special token id ", id, " is outside the vocabulary [0, ",
              c.vocab_size, ")");
  for (int32_t id : {c.pad_id, c.bos_id})
    TFM_CHECK(id >= -1 && id < c.vocab_size, "model: special token id ", id, " is outside the vocabulary [0, ",
              c.vocab_size, ") and is not -1 (none)");
  const std::pair<const char*, int32_t> ids[] = {{"pad_id", c.pad_id}, {"unk_id", c.unk_id}, {"bos_id", c.bos_id},
                                                 {"eos_id", c.eos_id}};
  for (size_t a = 0; a < 4; ++a)
    for (size_t b = a + 1; b < 4; ++b) {
      // none, or the decoder starts from pad (Marian) or from end of sentence (fairseq's M2M-100)
      const bool allowed = ids[a].second == -1 || (a == 0 && b == 2) || (a == 2 && b == 3);
      TFM_CHECK(allowed || ids[a].second != ids[b].second, "model: ", ids[a].first, " and ", ids[b].first,
                " must differ, both are ", ids[a].second);
    }
}

// The further end-of-sequence ids: in the vocabulary, none twice, and none that is eos_id or that
// the output may not contain (padding, BOS: banned from every hypothesis, so they could end none).
void check_stop_ids(const ModelConfig& c) {
  for (int32_t id : c.stop_ids) {
    TFM_CHECK(id >= 0 && id < c.vocab_size, "model: stop_ids: id ", id, " is outside the vocabulary [0, ",
              c.vocab_size, ")");
    for (const auto& [name, other] : {std::pair{"eos_id", c.eos_id}, {"pad_id", c.pad_id}, {"bos_id", c.bos_id}})
      TFM_CHECK(id != other, "model: stop_ids: id ", id, " is the model's ", name,
                std::string_view(name) == "eos_id" ? " (list only the further end-of-sequence ids)"
                                                   : ", which the output may not contain");
  }
  std::vector<int32_t> sorted = c.stop_ids;
  std::sort(sorted.begin(), sorted.end());
  const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  TFM_CHECK(twice == sorted.end(), "model: stop_ids lists id ", twice == sorted.end() ? 0 : *twice, " twice");
}

void check_one_of(const char* field, const std::string& value, std::initializer_list<const char*> known) {
  std::string list;
  for (const char* k : known) {
    if (value == k) return;
    list += list.empty() ? k : cat(", ", k);
  }
  throw Error(cat("model: ", field, " must be one of ", list, ", got '", value, "'"));
}

// The activation and the positional encoding: known names, and what each needs of d_model.
void check_choices(const ModelConfig& c) {
  check_one_of("activation", c.activation, {"relu", "swish", "gelu", "gelu_tanh", "gelu_sigmoid"});
  check_one_of("positions", c.positions, {"interleaved", "sin_cos", "learned", "rope", "none"});
  check_one_of("norm", c.norm, {"layernorm", "rmsnorm"});
  check_one_of("position_frequencies", c.position_frequencies, {"paper", "marian"});
  check_one_of("pooling", c.pooling, {"mean", "cls", "last", "max", "none"});
  TFM_CHECK(c.position_frequencies != "marian" || c.d_model >= 4,
            "model: position_frequencies 'marian' needs d_model >= 4, got ", c.d_model);
  TFM_CHECK(c.positions != "sin_cos" || c.d_model % 2 == 0, "model: positions 'sin_cos' needs an even d_model, got ",
            c.d_model);
  TFM_CHECK(c.position_offset >= 0 && c.position_offset <= 1'000'000,
            "model: position_offset must be in [0, 1000000], got ", c.position_offset);
}

// The architecture and what only some architectures or position kinds have.
void check_architecture(const ModelConfig& c) {
  check_one_of("architecture", c.architecture, {"encoder-decoder", "decoder-only", "encoder-only"});
  TFM_CHECK(c.max_positions >= 0 && c.max_positions <= 10'000'000, "model: max_positions must be in [0, 10000000], got ",
            c.max_positions);
  TFM_CHECK(c.positions != "learned" || c.max_positions > c.position_offset,
            "model: positions 'learned' needs max_positions (the table's rows) greater than position_offset ",
            c.position_offset, ", got ", c.max_positions);
  TFM_CHECK(c.token_types >= 0 && c.token_types <= 1'000, "model: token_types must be in [0, 1000], got ",
            c.token_types);
  TFM_CHECK(c.token_types == 0 || c.architecture == "encoder-only",
            "model: token_types (", c.token_types, ") needs architecture 'encoder-only', got '", c.architecture, "'");
  TFM_CHECK(!c.mlm_head || c.architecture == "encoder-only",
            "model: mlm_head needs architecture 'encoder-only', got '", c.architecture, "'");
}

// The variants of attention: grouped-query heads, the rotary positions' shape, the window.
void check_attention(const ModelConfig& c) {
  TFM_CHECK(c.kv_heads >= 0 && c.kv_heads <= c.heads, "model: kv_heads must be in [0, heads = ", c.heads, "], got ",
            c.kv_heads);
  TFM_CHECK(c.kv_heads == 0 || c.heads % c.kv_heads == 0, "model: kv_heads ", c.kv_heads, " does not divide heads ",
            c.heads);
  TFM_CHECK(c.attention_window >= 0 && c.attention_window <= 10'000'000,
            "model: attention_window must be in [0, 10000000] (0: none), got ", c.attention_window);
  TFM_CHECK(std::isfinite(c.rope_theta) && c.rope_theta > 0, "model: rope_theta must be positive, got ", c.rope_theta);
  TFM_CHECK(c.rotary_dims >= 0 && c.rotary_dims <= c.head_dim() && c.rotary_dims % 2 == 0,
            "model: rotary_dims must be even and in [0, head_dim = ", c.head_dim(), "] (0: all), got ", c.rotary_dims);
  TFM_CHECK(c.positions != "rope" || c.rotary_dims > 0 || c.head_dim() % 2 == 0,
            "model: positions 'rope' over whole heads needs an even head_dim (d_model / heads), got ", c.head_dim(),
            "; set rotary_dims");
  TFM_CHECK(c.positions == "rope" || (c.rotary_dims == 0 && c.rope_theta == 10000.0 && !c.rope_interleaved),
            "model: rotary_dims, rope_theta and rope_interleaved need positions 'rope', got '", c.positions, "'");
}

// The rotary rates' scaling: a known kind, its parameters in range, and no parameter set that the
// kind does not read (it would change nothing).
void check_rope_scaling(const ModelConfig& c) {
  check_one_of("rope_scaling", c.rope_scaling, {"none", "linear", "llama3"});
  TFM_CHECK(c.rope_scaling == "none" || c.positions == "rope", "model: rope_scaling '", c.rope_scaling,
            "' needs positions 'rope', got '", c.positions, "'");
  const ModelConfig d;
  TFM_CHECK(c.rope_scaling != "none" || c.rope_scaling_factor == d.rope_scaling_factor,
            "model: rope_scaling_factor ", c.rope_scaling_factor, " needs rope_scaling 'linear' or 'llama3', got 'none'");
  TFM_CHECK(std::isfinite(c.rope_scaling_factor) && c.rope_scaling_factor > 0,
            "model: rope_scaling_factor must be positive, got ", c.rope_scaling_factor);
  if (c.rope_scaling != "llama3") {
    TFM_CHECK(c.rope_low_freq_factor == d.rope_low_freq_factor && c.rope_high_freq_factor == d.rope_high_freq_factor &&
                  c.rope_original_max_positions == d.rope_original_max_positions,
              "model: rope_low_freq_factor (", c.rope_low_freq_factor, "), rope_high_freq_factor (",
              c.rope_high_freq_factor, ") and rope_original_max_positions (", c.rope_original_max_positions,
              ") need rope_scaling 'llama3', got '", c.rope_scaling, "'");
    return;
  }
  TFM_CHECK(std::isfinite(c.rope_low_freq_factor) && c.rope_low_freq_factor > 0,
            "model: rope_low_freq_factor must be positive, got ", c.rope_low_freq_factor);
  TFM_CHECK(std::isfinite(c.rope_high_freq_factor) && c.rope_high_freq_factor > c.rope_low_freq_factor,
            "model: rope_high_freq_factor must be greater than rope_low_freq_factor ", c.rope_low_freq_factor, ", got ",
            c.rope_high_freq_factor);
  TFM_CHECK(c.rope_original_max_positions > 0 && c.rope_original_max_positions <= 10'000'000,
            "model: rope_original_max_positions must be in [1, 10000000] with rope_scaling 'llama3', got ",
            c.rope_original_max_positions);
}
}  // namespace

void ModelConfig::validate() const {
  check_sizes(*this);
  check_rates(*this);
  check_special_ids(*this);
  check_stop_ids(*this);
  check_choices(*this);
  check_architecture(*this);
  check_attention(*this);
  check_rope_scaling(*this);
}

int64_t parameter_count(const ModelConfig& c) {
  const int64_t d = c.d_model, v = c.vocab_size, norm = (c.norm == "rmsnorm" ? 1 : 2) * d;
  const int64_t cross = 4 * d * d + (c.attention_bias ? 4 * d : 0), kv = c.self_kv_heads() * c.head_dim();
  const int64_t self = 2 * d * d + 2 * kv * d + (c.attention_bias ? 2 * d + 2 * kv : 0);
  const int64_t inner = (c.gated ? 2 : 1) * c.d_ff;  // fc1's rows
  const int64_t ffn = inner * d + d * c.d_ff + (c.ffn_bias ? inner + d : 0);
  const bool both = c.has_encoder() && c.has_decoder();
  int64_t n = (both && !c.tie_source_target ? 2 : 1) * v * d;  // token embeddings
  n += (c.positions == "learned" ? c.max_positions * d : 0) + c.token_types * d + (c.embedding_norm ? norm : 0);
  n += (c.tie_output ? 0 : v * d) + (c.output_bias ? v : 0);
  if (c.has_encoder()) n += c.encoder_layers * (self + ffn + 2 * norm);
  if (c.has_decoder()) n += c.decoder_layers * (self + (both ? cross : 0) + ffn + (both ? 3 : 2) * norm);
  const int64_t stacks = (c.has_encoder() ? 1 : 0) + (c.has_decoder() ? 1 : 0);
  if (c.pre_norm && c.final_norm) n += stacks * norm;
  if (c.mlm_head) n += d * d + d + norm;
  return n;
}

ModelConfig model_preset(const std::string& name) {
  ModelConfig c;
  if (name == "base") return c;
  auto set = [&](int64_t layers, int64_t d, int64_t ff, int64_t h, double p) {
    c.encoder_layers = c.decoder_layers = layers;
    c.d_model = d;
    c.d_ff = ff;
    c.heads = h;
    c.dropout = c.embedding_dropout = c.attention_dropout = p;
  };
  if (name == "big") set(6, 1024, 4096, 16, 0.3);
  else if (name == "small") set(3, 256, 1024, 4, 0.1);
  else if (name == "tiny") set(2, 32, 64, 4, 0.1);
  else throw Error(cat("unknown model preset '", name, "' (known: tiny, small, base, big)"));
  return c;
}

#define TFM_CONFIG_FIELDS(X)                                                                                   \
  X(vocab_size) X(d_model) X(d_ff) X(heads) X(encoder_layers) X(decoder_layers) X(dropout) X(embedding_dropout) \
  X(attention_dropout) X(pre_norm) X(tie_source_target) X(layer_norm_eps) X(pad_id) X(unk_id) X(bos_id) X(eos_id) \
  X(activation) X(positions) X(position_frequencies) X(position_offset) X(scale_embeddings) X(tie_output) X(output_bias) \
  X(architecture) X(max_positions) X(final_norm) X(embedding_norm) X(attention_bias) X(ffn_bias) X(token_types)    \
  X(mlm_head) X(norm) X(rope_theta) X(rotary_dims) X(rope_interleaved) X(gated) X(kv_heads) X(attention_window)  \
  X(pooling) X(normalize_embeddings) X(rope_scaling) X(rope_scaling_factor) X(rope_low_freq_factor)             \
  X(rope_high_freq_factor) X(rope_original_max_positions) \
  X(stop_ids)

const std::vector<std::string>& model_config_fields() {
#define TFM_NAME(f) #f,
  static const std::vector<std::string> names = {TFM_CONFIG_FIELDS(TFM_NAME)};
#undef TFM_NAME
  return names;
}

void to_json(nlohmann::json& j, const ModelConfig& c) {
  j = nlohmann::json::object();
#define TFM_WRITE(f) j[#f] = c.f;
  TFM_CONFIG_FIELDS(TFM_WRITE)
#undef TFM_WRITE
}

void from_json(const nlohmann::json& j, ModelConfig& c) {
  TFM_CHECK(j.is_object(), "model config must be a JSON object, got ", j.type_name());
  for (const auto& [key, value] : j.items()) {
    bool known = false;
#define TFM_READ(f)                                    \
  if (key == #f) {                                     \
    read_json_field(value, c.f, "model config field", key);  \
    known = true;                                      \
  }
    TFM_CONFIG_FIELDS(TFM_READ)
#undef TFM_READ
    TFM_CHECK(known, "unknown model config field '", key, "'");
  }
}

nlohmann::json model_config_for_file(const ModelConfig& c) {
  nlohmann::json j = c;
  const nlohmann::json defaults = ModelConfig();
  for (const char* field : {"architecture", "max_positions", "final_norm", "embedding_norm", "attention_bias",
                            "ffn_bias", "token_types", "mlm_head", "norm", "rope_theta", "rotary_dims",
                            "rope_interleaved", "gated", "kv_heads", "attention_window", "pooling",
                            "normalize_embeddings", "rope_scaling", "rope_scaling_factor", "rope_low_freq_factor",
                            "rope_high_freq_factor", "rope_original_max_positions", "stop_ids"})
    if (j[field] == defaults[field]) j.erase(field);
  return j;
}

ModelConfig ModelOverrides::apply_to(ModelConfig base) const {
#define TFM_APPLY(f) \
  if (f) base.f = *f;
  TFM_CONFIG_FIELDS(TFM_APPLY)
#undef TFM_APPLY
  return base;
}

void to_json(nlohmann::json& j, const ModelOverrides& o) {
  j = nlohmann::json::object();
#define TFM_WRITE(f) \
  if (o.f) j[#f] = *o.f;
  TFM_CONFIG_FIELDS(TFM_WRITE)
#undef TFM_WRITE
}

void from_json(const nlohmann::json& j, ModelOverrides& o) {
  TFM_CHECK(j.is_object(), "model config must be a JSON object, got ", j.type_name());
  for (const auto& [key, value] : j.items()) {
    bool known = false;
#define TFM_READ(f)                                      \
  if (key == #f) {                                       \
    auto v = o.f.value_or(decltype(o.f)::value_type{});   \
    read_json_field(value, v, "model config field", key); \
    o.f = v;                                             \
    known = true;                                        \
  }
    TFM_CONFIG_FIELDS(TFM_READ)
#undef TFM_READ
    TFM_CHECK(known, "unknown model config field '", key, "'");
  }
}

}  // namespace transformer
