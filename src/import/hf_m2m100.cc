// Hugging Face M2M100ForConditionalGeneration (M2M-100 and NLLB-200): a pre-norm encoder-decoder
// with a final norm per stack, one embedding shared by both stacks and the output, sinusoidal
// positions counted from the padding id + 1, and a decoder that starts from </s>.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_text.h"
#include "import/hf_m2m100.h"
#include "import/tensors.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// The sizes: the encoder's, which the decoder's must equal.
void read_sizes(const json& config, const fs::path& path, ModelConfig& c) {
  hf_read_seq2seq_sizes(config, path, c);
  TFM_CHECK(c.d_model % 2 == 0, "import hf: ", path.string(), ": d_model ", c.d_model,
            " is odd; the sinusoidal positions of an odd width (a zero last column) are not supported");
}

// A rate of dropping, in [0, 1).
double read_rate(const json& config, const char* key, double fallback, const fs::path& path) {
  const double v = hf_field<double>(config, key, fallback, path);
  TFM_CHECK(v >= 0 && v < 1, "import hf: ", path.string(), ": '", key, "' must be in [0, 1), got ", v);
  return v;
}

// The activation: transformers' ACT2FN names that this project computes.
std::string read_activation(const json& config, const fs::path& path) {
  const std::string a = hf_field<std::string>(config, "activation_function", "relu", path);
  if (a == "relu" || a == "gelu") return a;
  if (a == "gelu_new" || a == "gelu_pytorch_tanh") return "gelu_tanh";
  if (a == "silu" || a == "swish") return "swish";
  throw Error(cat("import hf: ", path.string(), ": activation_function '", a,
                  "' is not supported (relu, gelu, gelu_new, gelu_pytorch_tanh, silu, swish are)"));
}

// The computation and the training-only rates: dropout and attention_dropout carry over;
// activation_dropout and the layerdrops have no counterpart here, which a note says when they are
// not 0 (inference never uses them).
void read_architecture(const json& config, const fs::path& path, ModelConfig& c, std::vector<std::string>& notes) {
  TFM_CHECK(hf_field<bool>(config, "is_encoder_decoder", true, path), "import hf: ", path.string(),
            ": 'is_encoder_decoder' false is not an M2M-100 translator");
  c.activation = read_activation(config, path);
  c.pre_norm = true;
  c.final_norm = true;  // model.encoder.layer_norm, model.decoder.layer_norm
  c.layer_norm_eps = 1e-5;  // torch.nn.LayerNorm's
  c.scale_embeddings = hf_field<bool>(config, "scale_embedding", true, path);
  c.tie_source_target = true;  // model.shared, the encoder's and the decoder's embed_tokens
  c.tie_output = hf_field<bool>(config, "tie_word_embeddings", true, path);
  c.output_bias = false;
  c.positions = "sin_cos";
  c.position_frequencies = "marian";  // M2M100SinusoidalPositionalEmbedding: exp(−i·ln 10000 / (D/2 − 1))
  c.dropout = read_rate(config, "dropout", 0.1, path);
  c.embedding_dropout = c.dropout;
  c.attention_dropout = read_rate(config, "attention_dropout", 0.1, path);
  for (const char* key : {"activation_dropout", "encoder_layerdrop", "decoder_layerdrop"})
    if (const double v = read_rate(config, key, 0.0, path); v != 0)
      notes.push_back(cat(key, " ", v, " (training only) is not carried over: training here has no counterpart"));
  const int64_t max_positions = hf_field<int64_t>(config, "max_position_embeddings", 1024, path);
  TFM_CHECK(max_positions > 0, "import hf: ", path.string(), ": 'max_position_embeddings' must be positive, got ",
            max_positions);
}

// config.json → ModelConfig, but for unk_id (the tokenizer's). Positions count from the padding id
// + 1, as M2M100SinusoidalPositionalEmbedding numbers the tokens that are not padding; the decoder
// starts from decoder_start_token_id (</s>).
ModelConfig model_config(const json& config, const fs::path& path, std::vector<std::string>& notes) {
  ModelConfig c;
  read_sizes(config, path, c);
  read_architecture(config, path, c, notes);
  c.pad_id = hf_field<int32_t>(config, "pad_token_id", 1, path);
  TFM_CHECK(c.pad_id >= 0, "import hf: ", path.string(), ": 'pad_token_id' must be a token id, got ", c.pad_id);
  c.eos_id = hf_field<int32_t>(config, "eos_token_id", 2, path);
  c.bos_id = hf_field<int32_t>(config, "decoder_start_token_id", c.eos_id, path);
  c.position_offset = c.pad_id + 1;
  if (config.contains("forced_bos_token_id") && !config["forced_bos_token_id"].is_null())
    notes.push_back(cat("config.json's forced_bos_token_id ", json_quote(config["forced_bos_token_id"]),
                        " is not applied: translate's --target-lang chooses the first token"));
  return c;
}

// Whether t holds the table M2M100SinusoidalPositionalEmbedding computes: row p has sin(p·r_i),
// then cos(p·r_i), r_i = exp(−i·ln 10000 / (D/2 − 1)); the padding row zero.
bool holds_sinusoids(const Tensor& t, int64_t d_model, int64_t pad) {
  if (t.shape().rank() != 2 || t.shape()[1] != d_model) return false;
  const std::vector<double> v = t.to_doubles();
  const int64_t half = d_model / 2;
  for (int64_t p = 0; p < t.shape()[0]; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::exp(-static_cast<double>(i) * std::log(10000.0) / (half - 1));
      const bool zero = p == pad;
      if (std::abs(v[p * d_model + i] - (zero ? 0 : std::sin(angle))) > 1e-3 ||
          std::abs(v[p * d_model + half + i] - (zero ? 0 : std::cos(angle))) > 1e-3)
        return false;
    }
  return true;
}

// vocab_size at most the shared embedding's rows, from the checkpoint's header, before the
// vocabulary is filled up to vocab_size (an absurd one would take all memory).
void check_vocab_size(const HfFolderInfo& f, const ModelConfig& c) {
  const HfCheckpoint file = HfCheckpoint::open(f.dir);
  for (const char* name : {"model.shared.weight", "model.encoder.embed_tokens.weight"}) {
    if (!file.has(name)) continue;
    const Shape shape = file.shape(name);
    TFM_CHECK(shape.rank() == 2 && c.vocab_size <= shape[0], "import hf: ", file.file_of(name), ": tensor '", name,
              "' has shape ", shape, " but config.json's vocab_size is ", c.vocab_size,
              ": are config.json and the weights of one model?");
    return;
  }
}

// Every parameter from the checkpoint; copies of the shared embedding must equal it, a saved
// position table must hold the sinusoids computed here, and any other tensor is refused.
std::vector<NamedTensor> convert_weights(const HfFolderInfo& f, const ModelConfig& c) {
  const HfCheckpoint file = HfCheckpoint::open(f.dir);
  HfWeights w(file);
  w.put("embed.weight", w.first_of({"model.shared.weight", "model.encoder.embed_tokens.weight",
                                    "model.decoder.embed_tokens.weight"}));
  const Tensor& shared = w.converted("embed.weight");
  TFM_CHECK(shared.shape() == Shape({c.vocab_size, c.d_model}), "import hf: ", file.source(),
            ": the shared embedding has shape ", shared.shape(), " but config.json's vocab_size ", c.vocab_size,
            " and d_model ", c.d_model, " need [", c.vocab_size, ", ", c.d_model,
            "]: are config.json and the weights of one model?");
  for (const char* name : {"model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"}) {
    if (!w.has(name) || w.used(name)) continue;
    const Tensor copy = w.get(name);  // the stacks use model.shared whatever the file holds
    TFM_CHECK(copy.shape() == shared.shape() && std::memcmp(copy.raw(), shared.raw(), shared.bytes()) == 0,
              "import hf: ", file.file_of(name), ": tensor '", name,
              "' differs from model.shared.weight, the embedding both stacks use");
  }
  if (!c.tie_output) w.put("output.weight", w.get("lm_head.weight"));
  else if (w.has("lm_head.weight")) w.check_copy("lm_head.weight", "embed.weight", "tie_word_embeddings");
  for_each_layer_param(c, [&](const LayerParam& p) { w.put(p.name, w.get(hf_seq2seq_layer_param(p))); });
  for (const char* stack : {"encoder", "decoder"})
    for (const char* part : {"weight", "bias"})
      w.put(cat(stack, ".final_norm.", part), w.get(cat("model.", stack, ".layer_norm.", part)));
  for (const char* stack : {"encoder", "decoder"}) {
    const std::string name = cat("model.", stack, ".embed_positions.weights");
    if (!w.has(name)) continue;
    TFM_CHECK(holds_sinusoids(w.get(name), c.d_model, c.pad_id), "import hf: ", file.source(), ": tensor '", name,
              "' does not hold the sinusoidal positions the model computes");
  }
  w.refuse_unread(cat("encoder_layers ", c.encoder_layers, ", decoder_layers ", c.decoder_layers,
                      ", tie_word_embeddings ", c.tie_output ? "true" : "false"));
  return w.take();
}
}  // namespace

ImportedModel import_hf_m2m100(const HfFolderInfo& info) {
  ImportedModel m;
  m.config = model_config(info.config, info.config_path, m.notes);
  check_vocab_size(info, m.config);
  m.vocab = m2m100_vocabulary(info, m.config, m.notes);
  m.config.validate();
  m.tensors = convert_weights(info, m.config);
  m.provenance = hf_provenance(info, "huggingface-m2m100");
  m.notes.push_back(cat("positions: sines then cosines at rates exp(-i ln 10000 / (D/2 - 1)), from position ",
                        m.config.position_offset, " (the padding id + 1), as transformers' M2M-100"));
  if (!m.vocab.languages().empty())
    m.notes.push_back(cat(m.vocab.languages().size(), " language codes (translate --source-lang and --target-lang), "
                          "e.g. ", m.vocab.languages().front().first));
  return m;
}

}  // namespace tfm
