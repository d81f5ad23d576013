// Hugging Face GPT-2 folders (transformers' GPT2LMHeadModel, or GPT2Model's weights without the
// "transformer." prefix as OpenAI's checkpoints on the hub store them): learned positions, pre-norm
// LayerNorm, Conv1D weights stored [in, out], the queries, keys and values in one c_attn.
#include <filesystem>
#include <string>

#include "import/hf_decoder.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// activation_function → ModelConfig's activation; anything else refused.
std::string activation(const json& config, const fs::path& path) {
  const std::string a = hf_field<std::string>(config, "activation_function", "gelu_new", path);
  if (a == "gelu_new" || a == "gelu_pytorch_tanh") return "gelu_tanh";
  if (a == "gelu" || a == "relu") return a;
  if (a == "silu" || a == "swish") return "swish";
  throw Error(cat("import hf: ", path.string(), ": activation_function '", a,
                  "' is not supported (gelu_new, gelu_pytorch_tanh, gelu, relu, silu, swish are)"));
}

// What changes GPT-2's attention beyond the family's: refused unless it holds the default.
void refuse_attention_variants(const json& config, const fs::path& path) {
  TFM_CHECK(hf_field<bool>(config, "scale_attn_weights", true, path), "import hf: ", path.string(),
            ": scale_attn_weights false (attention without the 1/sqrt(head_dim) scale) is not supported");
  TFM_CHECK(!hf_field<bool>(config, "scale_attn_by_inverse_layer_idx", false, path), "import hf: ", path.string(),
            ": scale_attn_by_inverse_layer_idx true is not supported");
  // Only the precision of the attention scores' product changes, not the value: accepted.
  hf_field<bool>(config, "reorder_and_upcast_attn", false, path);
  TFM_CHECK(!hf_field<bool>(config, "add_cross_attention", false, path), "import hf: ", path.string(),
            ": add_cross_attention true (GPT-2 as a decoder over an encoder) is not supported");
}

ModelConfig model_config(const HfFolderInfo& f, std::vector<std::string>& notes) {
  const json& config = f.config;
  const fs::path& path = f.config_path;
  ModelConfig c;
  c.architecture = "decoder-only";
  c.vocab_size = hf_required<int64_t>(config, "vocab_size", path);
  c.d_model = hf_field<int64_t>(config, "n_embd", 768, path);
  c.decoder_layers = hf_field<int64_t>(config, "n_layer", 12, path);
  c.encoder_layers = 0;
  c.heads = hf_field<int64_t>(config, "n_head", 12, path);
  c.d_ff = hf_field<int64_t>(config, "n_inner", 4 * c.d_model, path);
  c.max_positions = hf_field<int64_t>(config, "n_positions", 1024, path);
  c.positions = "learned";
  c.activation = activation(config, path);
  refuse_attention_variants(config, path);
  c.layer_norm_eps = hf_field<double>(config, "layer_norm_epsilon", 1e-5, path);
  c.norm = "layernorm";
  c.pre_norm = true;
  c.final_norm = true;
  c.scale_embeddings = false;
  c.tie_output = hf_field<bool>(config, "tie_word_embeddings", true, path);
  c.dropout = hf_field<double>(config, "resid_pdrop", 0.1, path);
  c.embedding_dropout = hf_field<double>(config, "embd_pdrop", 0.1, path);
  c.attention_dropout = hf_field<double>(config, "attn_pdrop", 0.1, path);
  hf_decoder_special_ids(f, c, notes);
  return c;
}

// The checkpoint's prefix: "transformer." (GPT2LMHeadModel) or "" (GPT2Model, OpenAI's files).
std::string prefix_of(const HfCheckpoint& file) {
  if (file.has("transformer.wte.weight")) return "transformer.";
  TFM_CHECK(file.has("wte.weight"), "import hf: ", file.source(),
            " has neither 'transformer.wte.weight' nor 'wte.weight': is it a GPT-2 checkpoint?");
  return "";
}

// Layer i: c_attn's [D, 3D] split into q, k, v; the Conv1D weights transposed to [out, in].
void convert_layer(HfWeights& w, const std::string& p, const std::string& ours, int64_t D) {
  const Tensor qkv = hf_transposed(w, p + "attn.c_attn.weight");  // [3D, D]
  const Tensor qkv_bias = w.get(p + "attn.c_attn.bias");              // [3D]
  TFM_CHECK(qkv.shape() == Shape({3 * D, D}) && qkv_bias.shape() == Shape({3 * D}), "import hf: ",
            w.checkpoint().file_of(p + "attn.c_attn.weight"), ": '", p, "attn.c_attn' has shape ", qkv.shape(),
            " (transposed), not [", 3 * D, ", ", D, "]");
  const char* parts[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    w.put(cat(ours, "self_attn.", parts[i], "_proj.weight"), hf_rows(qkv, i * D, D));
    w.put(cat(ours, "self_attn.", parts[i], "_proj.bias"), hf_rows(qkv_bias, i * D, D));
  }
  w.put(ours + "self_attn.out_proj.weight", hf_transposed(w, p + "attn.c_proj.weight"));
  w.put(ours + "self_attn.out_proj.bias", w.get(p + "attn.c_proj.bias"));
  w.put(ours + "ffn.fc1.weight", hf_transposed(w, p + "mlp.c_fc.weight"));
  w.put(ours + "ffn.fc1.bias", w.get(p + "mlp.c_fc.bias"));
  w.put(ours + "ffn.fc2.weight", hf_transposed(w, p + "mlp.c_proj.weight"));
  w.put(ours + "ffn.fc2.bias", w.get(p + "mlp.c_proj.bias"));
  for (const auto& [theirs, mine] : {std::pair{"ln_1", "self_attn_norm"}, std::pair{"ln_2", "ffn_norm"}})
    for (const char* part : {".weight", ".bias"}) w.put(cat(ours, mine, part), w.get(cat(p, theirs, part)));
  // The causal mask buffers older checkpoints saved: the model computes the mask.
  for (const char* buffer : {"attn.bias", "attn.masked_bias"})
    if (w.has(p + buffer)) w.skip(p + buffer);
}

std::vector<NamedTensor> convert_weights(const HfFolderInfo& f, const ModelConfig& c) {
  const HfCheckpoint file = HfCheckpoint::open(f.dir);
  HfWeights w(file);
  const std::string p = prefix_of(file);
  w.put("embed.weight", w.get(p + "wte.weight"));
  w.put("positions.weight", w.get(p + "wpe.weight"));
  for (int64_t i = 0; i < c.decoder_layers; ++i)
    convert_layer(w, cat(p, "h.", i, "."), cat("decoder.layers.", i, "."), c.d_model);
  w.put("decoder.final_norm.weight", w.get(p + "ln_f.weight"));
  w.put("decoder.final_norm.bias", w.get(p + "ln_f.bias"));
  if (!c.tie_output) w.put("output.weight", w.get("lm_head.weight"));
  else if (w.has("lm_head.weight")) w.check_copy("lm_head.weight", "embed.weight", "tie_word_embeddings");
  w.refuse_unread(cat("n_layer ", c.decoder_layers, ", tie_word_embeddings ", c.tie_output ? "true" : "false"));
  return w.take();
}
}  // namespace

ImportedModel import_hf_gpt2(const HfFolderInfo& folder) {
  ImportedModel m;
  m.config = model_config(folder, m.notes);
  m.config.validate();
  m.tensors = convert_weights(folder, m.config);
  m.provenance = hf_provenance(folder, "huggingface-gpt2");
  m.notes.push_back("activation " + m.config.activation + ", learned positions, pre-norm LayerNorm");
  return m;
}

}  // namespace tfm
