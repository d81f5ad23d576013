// Hugging Face Llama-family folders (transformers' LlamaForCausalLM, Qwen2ForCausalLM and
// MistralForCausalLM): RMSNorm before each sub-layer, rotary positions on halves of each head
// (rotate_half), a SwiGLU feed-forward, grouped-query attention; Qwen2's biases on q, k and v,
// Mistral's sliding window.
#include <cmath>
#include <filesystem>
#include <string>

#include "import/hf_decoder.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// What the three architectures differ in.
struct Family {
  std::string type;  // model_type: llama | qwen2 | mistral
  bool qkv_bias;     // Qwen2: biases on q, k and v (none on o_proj)
};

Family family_of(const std::string& model_type) { return {model_type, model_type == "qwen2"}; }

void read_sizes(const json& config, const fs::path& path, ModelConfig& c) {
  c.vocab_size = hf_required<int64_t>(config, "vocab_size", path);
  c.d_model = hf_required<int64_t>(config, "hidden_size", path);
  c.d_ff = hf_required<int64_t>(config, "intermediate_size", path);
  c.decoder_layers = hf_required<int64_t>(config, "num_hidden_layers", path);
  c.encoder_layers = 0;
  c.heads = hf_required<int64_t>(config, "num_attention_heads", path);
  TFM_CHECK(c.heads > 0 && c.d_model % c.heads == 0, "import hf: ", path.string(), ": hidden_size ", c.d_model,
            " is not a multiple of num_attention_heads ", c.heads);
  const int64_t kv = hf_field<int64_t>(config, "num_key_value_heads", c.heads, path);
  TFM_CHECK(kv >= 1 && kv <= c.heads && c.heads % kv == 0, "import hf: ", path.string(), ": num_key_value_heads ", kv,
            " does not divide num_attention_heads ", c.heads, " (each key/value head serves as many query heads)");
  c.kv_heads = kv == c.heads ? 0 : kv;
  const int64_t head_dim = hf_field<int64_t>(config, "head_dim", c.d_model / c.heads, path);
  TFM_CHECK(head_dim == c.d_model / c.heads, "import hf: ", path.string(), ": head_dim ", head_dim,
            " is not hidden_size / num_attention_heads = ", c.d_model / c.heads,
            "; heads of another width than the model's divided are not supported");
  c.max_positions = hf_field<int64_t>(config, "max_position_embeddings", 0, path);
}

// A number of the rotary scaling's parameters that its type needs; `key` names where they are
// (rope_parameters or rope_scaling).
double rope_number(const json& rope, const char* name, const char* key, const std::string& type,
                   const fs::path& path) {
  TFM_CHECK(rope.contains(name) && !rope[name].is_null(), "import hf: ", path.string(), ": ", key, " of type '", type,
            "' has no '", name, "'");
  const double v = hf_field<double>(rope, name, 0.0, path);
  TFM_CHECK(std::isfinite(v) && v > 0, "import hf: ", path.string(), ": ", key, " '", name, "' ", v,
            " must be positive");
  return v;
}

// The scaling of the rotary rates, as transformers' rope types compute them: "linear" (each rate
// divided by factor) and "llama3" (Llama 3.1's rule by wavelength); the original_max_position_embeddings
// of llama3 is config.json's where it has one (as transformers gives it priority), else the rope
// dictionary's, else max_position_embeddings. Other types are refused.
void read_rope_scaling(const json& config, const json& rope, const char* key, const std::string& type,
                       const fs::path& path, ModelConfig& c) {
  if (type == "default") return;
  TFM_CHECK(type == "linear" || type == "llama3", "import hf: ", path.string(), ": ", key, " type '", type,
            "' is not supported (the original rotation 'default', 'linear' and 'llama3' are)");
  c.rope_scaling = type;
  c.rope_scaling_factor = rope_number(rope, "factor", key, type, path);
  if (type == "linear") return;
  c.rope_low_freq_factor = rope_number(rope, "low_freq_factor", key, type, path);
  c.rope_high_freq_factor = rope_number(rope, "high_freq_factor", key, type, path);
  TFM_CHECK(c.rope_high_freq_factor > c.rope_low_freq_factor, "import hf: ", path.string(), ": ", key,
            " high_freq_factor ", c.rope_high_freq_factor, " is not greater than low_freq_factor ",
            c.rope_low_freq_factor, " (the rule interpolates between them)");
  const int64_t original = hf_field<int64_t>(
      config, "original_max_position_embeddings",
      hf_field<int64_t>(rope, "original_max_position_embeddings", c.max_positions, path), path);
  TFM_CHECK(original > 0, "import hf: ", path.string(), ": ", key, " type 'llama3' needs a positive ",
            "original_max_position_embeddings (or max_position_embeddings), got ", original);
  c.rope_original_max_positions = original;
}

// The rotary positions: rope_parameters (transformers 5) or rope_theta with rope_scaling (earlier
// files), over whole heads; the rates as they are ("default") or scaled (read_rope_scaling).
void read_rope(const json& config, const fs::path& path, ModelConfig& c) {
  c.positions = "rope";
  c.rope_interleaved = false;  // rotate_half: dimension i turns with i + head_dim/2
  json rope = json::object();
  if (config.contains("rope_parameters") && !config["rope_parameters"].is_null()) rope = config["rope_parameters"];
  else if (config.contains("rope_scaling") && !config["rope_scaling"].is_null()) rope = config["rope_scaling"];
  const char* key = config.contains("rope_parameters") ? "rope_parameters" : "rope_scaling";
  TFM_CHECK(rope.is_object(), "import hf: ", path.string(), ": '", key, "' must be an object, got ", json_quote(rope));
  for (const auto& [name, value] : rope.items())
    TFM_CHECK(!value.is_object(), "import hf: ", path.string(), ": ", key, " '", name,
              "' holds parameters of its own (rotary positions per layer type): not supported");
  std::string type = hf_field<std::string>(rope, "type", "default", path);
  type = hf_field<std::string>(rope, "rope_type", type, path);
  read_rope_scaling(config, rope, key, type, path, c);
  c.rope_theta = hf_field<double>(rope, "rope_theta", hf_field<double>(config, "rope_theta", 10000.0, path), path);
  for (const json* where : {static_cast<const json*>(&rope), &config}) {
    const double factor = hf_field<double>(*where, "partial_rotary_factor", 1.0, path);
    TFM_CHECK(factor == 1.0, "import hf: ", path.string(), ": partial_rotary_factor ", factor,
              " is not supported (these architectures rotate whole heads)");
  }
}

// The attention window: Mistral's sliding_window (query i sees keys j > i − window, as
// transformers' sliding_window_overlay); Qwen2's only where use_sliding_window makes every layer
// slide (its layer_types, or max_window_layers 0); Llama has none.
void read_window(const Family& fam, const json& config, const fs::path& path, ModelConfig& c) {
  const int64_t window = hf_field<int64_t>(config, "sliding_window", 0, path);
  TFM_CHECK(window >= 0, "import hf: ", path.string(), ": sliding_window ", window, " is negative");
  if (fam.type == "mistral") {
    c.attention_window = window;
    return;
  }
  if (fam.type != "qwen2" || !hf_field<bool>(config, "use_sliding_window", false, path)) return;
  const int64_t from = hf_field<int64_t>(config, "max_window_layers", c.decoder_layers, path);
  if (from >= c.decoder_layers) return;  // no layer slides
  TFM_CHECK(from == 0 && window > 0, "import hf: ", path.string(), ": use_sliding_window true with max_window_layers ",
            from, " (layers from ", from, " of ", c.decoder_layers,
            " slide) is not supported: every layer has the same attention here");
  c.attention_window = window;
}

// Qwen2's layer_types (transformers 5): every layer full, or every layer sliding as read_window says.
void check_layer_types(const json& config, const fs::path& path, const ModelConfig& c) {
  if (!config.contains("layer_types") || config["layer_types"].is_null()) return;
  const json& types = config["layer_types"];
  const std::string want = c.attention_window > 0 ? "sliding_attention" : "full_attention";
  TFM_CHECK(types.is_array(), "import hf: ", path.string(), ": 'layer_types' must be a list, got ", json_quote(types));
  for (const json& t : types)
    TFM_CHECK(t == want, "import hf: ", path.string(), ": layer_types ", json_quote(types), " has ", json_quote(t),
              " where this configuration makes every layer ", want, "; layers of different attention are not supported");
}

void read_architecture(const Family& fam, const json& config, const fs::path& path, ModelConfig& c) {
  const std::string act = hf_field<std::string>(config, "hidden_act", "silu", path);
  TFM_CHECK(act == "silu" || act == "swish", "import hf: ", path.string(), ": hidden_act '", act,
            "' is not supported (silu is: SwiGLU)");
  c.activation = "swish";
  c.gated = true;
  c.norm = "rmsnorm";
  c.layer_norm_eps = hf_field<double>(config, "rms_norm_eps", 1e-6, path);
  c.pre_norm = true;
  c.final_norm = true;
  c.scale_embeddings = false;
  // Llama's attention_bias puts biases on all four projections; Qwen2's q, k and v have biases and
  // its o_proj none, which the import expresses as a bias of zeros.
  c.attention_bias = fam.qkv_bias || (fam.type == "llama" && hf_field<bool>(config, "attention_bias", false, path));
  c.ffn_bias = fam.type == "llama" && hf_field<bool>(config, "mlp_bias", false, path);
  c.tie_output = hf_field<bool>(config, "tie_word_embeddings", false, path);  // each class's default
  c.dropout = c.embedding_dropout = 0.0;
  c.attention_dropout = hf_field<double>(config, "attention_dropout", 0.0, path);
  read_rope(config, path, c);
  read_window(fam, config, path, c);
  if (fam.type == "qwen2") check_layer_types(config, path, c);
}

// Layer i's parameters under this project's names.
void convert_layer(HfWeights& w, const Family& fam, const ModelConfig& c, const std::string& p,
                   const std::string& ours) {
  for (const char* part : {"q", "k", "v"}) {
    w.put(cat(ours, "self_attn.", part, "_proj.weight"), w.get(cat(p, "self_attn.", part, "_proj.weight")));
    if (c.attention_bias) w.put(cat(ours, "self_attn.", part, "_proj.bias"), w.get(cat(p, "self_attn.", part, "_proj.bias")));
  }
  w.put(ours + "self_attn.out_proj.weight", w.get(p + "self_attn.o_proj.weight"));
  if (c.attention_bias)
    w.put(ours + "self_attn.out_proj.bias",
          fam.qkv_bias ? Tensor::zeros({c.d_model}) : w.get(p + "self_attn.o_proj.bias"));
  w.put(ours + "self_attn_norm.weight", w.get(p + "input_layernorm.weight"));
  w.put(ours + "ffn_norm.weight", w.get(p + "post_attention_layernorm.weight"));
  const std::string mlp = cat(w.checkpoint().source(), ": '", p, "mlp.gate_proj' and 'up_proj'");
  w.put(ours + "ffn.fc1.weight", hf_stacked(w.get(p + "mlp.gate_proj.weight"), w.get(p + "mlp.up_proj.weight"), mlp));
  w.put(ours + "ffn.fc2.weight", w.get(p + "mlp.down_proj.weight"));
  if (c.ffn_bias) {
    w.put(ours + "ffn.fc1.bias", hf_stacked(w.get(p + "mlp.gate_proj.bias"), w.get(p + "mlp.up_proj.bias"), mlp));
    w.put(ours + "ffn.fc2.bias", w.get(p + "mlp.down_proj.bias"));
  }
  // The rotary frequencies older versions saved as a buffer: the model computes them from rope_theta.
  if (w.has(p + "self_attn.rotary_emb.inv_freq")) w.skip(p + "self_attn.rotary_emb.inv_freq");
}

std::vector<NamedTensor> convert_weights(const HfFolderInfo& f, const Family& fam, const ModelConfig& c) {
  const HfCheckpoint file = HfCheckpoint::open(f.dir);
  HfWeights w(file);
  w.put("embed.weight", w.get("model.embed_tokens.weight"));
  for (int64_t i = 0; i < c.decoder_layers; ++i)
    convert_layer(w, fam, c, cat("model.layers.", i, "."), cat("decoder.layers.", i, "."));
  w.put("decoder.final_norm.weight", w.get("model.norm.weight"));
  if (!c.tie_output) w.put("output.weight", w.get("lm_head.weight"));
  else if (w.has("lm_head.weight")) w.check_copy("lm_head.weight", "embed.weight", "tie_word_embeddings");
  w.refuse_unread(cat("num_hidden_layers ", c.decoder_layers, ", tie_word_embeddings ", c.tie_output ? "true" : "false",
                      ", biases ", c.attention_bias ? "on attention" : "none", c.ffn_bias ? " and feed-forward" : ""));
  return w.take();
}
}  // namespace

ImportedModel import_hf_llama(const HfFolderInfo& folder) {
  const Family fam = family_of(folder.model_type);
  ImportedModel m;
  ModelConfig& c = m.config;
  c.architecture = "decoder-only";
  read_sizes(folder.config, folder.config_path, c);
  read_architecture(fam, folder.config, folder.config_path, c);
  hf_decoder_special_ids(folder, c, m.notes);
  c.validate();
  m.tensors = convert_weights(folder, fam, c);
  m.provenance = hf_provenance(folder, "huggingface-" + fam.type);
  m.notes.push_back(cat("rope theta ", c.rope_theta, " on halves of each head",
                        c.rope_scaling == "none" ? std::string() : cat(", rates scaled (", c.rope_scaling, ", factor ",
                                                                       c.rope_scaling_factor, ")"),
                        ", RMSNorm, SwiGLU",
                        c.kv_heads > 0 ? cat(", ", c.kv_heads, " key/value heads") : std::string(),
                        c.attention_window > 0 ? cat(", attention window ", c.attention_window) : std::string()));
  if (fam.qkv_bias) m.notes.push_back("o_proj has no bias: imported as a bias of zeros");
  return m;
}

}  // namespace tfm
