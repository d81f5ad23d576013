// Hugging Face MarianMT folders (transformers' MarianMTModel, as converted from OPUS-MT by
// transformers' convert_marian_to_pytorch or trained with transformers): config.json, the weights
// in model.safetensors, vocab.json, source.spm and target.spm.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/json_text.h"
#include "import/hf_common.h"
#include "import/tensors.h"
#include "io/atomic_file.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// The files of a Hugging Face MarianMT folder.
struct HfFolder {
  explicit HfFolder(const std::string& given) : name(given), dir(given) {}
  std::string name;  // as given
  fs::path dir;
  fs::path config = dir / "config.json", vocab = dir / "vocab.json", tokenizer = dir / "tokenizer_config.json",
           source_spm = dir / "source.spm", target_spm = dir / "target.spm", weights = dir / "model.safetensors";
};

// The sizes: the encoder's, which the decoder's must equal, and one vocabulary for both sides.
void read_sizes(const json& config, const fs::path& path, ModelConfig& c) {
  hf_read_seq2seq_sizes(config, path, c);
  const int64_t target_vocab = hf_field<int64_t>(config, "decoder_vocab_size", c.vocab_size, path);
  TFM_CHECK(target_vocab == c.vocab_size, "import hf: ", path.string(), ": decoder_vocab_size ", target_vocab,
            " differs from vocab_size ", c.vocab_size, "; separate source and target vocabularies are not supported yet");
}

// The computation: the activation, post-norm layers, sinusoidal positions at the paper's rates
// (every other choice refused), the tied weights and the dropout rates.
void read_architecture(const json& config, const fs::path& path, ModelConfig& c) {
  const std::string activation = hf_field<std::string>(config, "activation_function", "gelu", path);
  if (activation == "relu" || activation == "swish" || activation == "gelu") c.activation = activation;
  else if (activation == "silu") c.activation = "swish";
  else
    throw Error(cat("import hf: ", path.string(), ": activation_function '", activation,
                    "' is not supported (relu, swish, silu, gelu are)"));
  for (const char* flag : {"normalize_before", "normalize_embedding", "add_bias_logits", "add_final_layer_norm"})
    TFM_CHECK(!hf_field<bool>(config, flag, false, path), "import hf: ", path.string(), ": '", flag,
              "' true is not supported");
  TFM_CHECK(hf_field<bool>(config, "static_position_embeddings", true, path), "import hf: ", path.string(),
            ": learned positions (static_position_embeddings false) are not supported");
  c.scale_embeddings = hf_field<bool>(config, "scale_embedding", false, path);
  c.tie_source_target = hf_field<bool>(config, "share_encoder_decoder_embeddings", true, path);
  c.tie_output = hf_field<bool>(config, "tie_word_embeddings", true, path);
  c.output_bias = true;  // MarianMTModel's final_logits_bias
  c.positions = "sin_cos";
  c.position_frequencies = "paper";  // MarianSinusoidalPositionalEmbedding: 10000^(−2i/D)
  c.layer_norm_eps = 1e-5;           // torch.nn.LayerNorm's
  c.pre_norm = false;
  c.dropout = hf_field<double>(config, "dropout", 0.1, path);
  c.attention_dropout = hf_field<double>(config, "attention_dropout", 0.0, path);
  c.embedding_dropout = c.dropout;
}

// config.json → ModelConfig, but for unk_id (the tokenizer's).
ModelConfig model_config(const json& config, const fs::path& path) {
  ModelConfig c;
  read_sizes(config, path, c);
  read_architecture(config, path, c);
  c.pad_id = hf_required<int32_t>(config, "pad_token_id", path);
  c.eos_id = hf_required<int32_t>(config, "eos_token_id", path);
  c.bos_id = hf_field<int32_t>(config, "decoder_start_token_id", c.pad_id, path);
  return c;
}

// vocab.json's pieces in the order of their ids, which must be 0..n-1, each once.
std::vector<std::string> pieces_by_id(const json& vocab, const fs::path& path) {
  TFM_CHECK(vocab.is_object(), "import hf: ", path.string(), " is not a JSON object of pieces and ids");
  std::vector<std::string> pieces(vocab.size());
  std::vector<bool> seen(vocab.size(), false);
  for (const auto& [piece, id] : vocab.items()) {
    TFM_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < int64_t(vocab.size()),
              "import hf: ", path.string(), ": the id of '", piece, "' is ", json_quote(id), ", not in [0, ", vocab.size(),
              ")");
    const auto i = static_cast<size_t>(id.get<int64_t>());
    TFM_CHECK(!seen[i], "import hf: ", path.string(), ": id ", i, " is given twice (to '", pieces[i], "' and '", piece,
              "')");
    seen[i] = true;
    pieces[i] = piece;
  }
  return pieces;
}

// The tokenizer's special pieces (tokenizer_config.json, if any) and their ids in vocab.json.
struct HfTokenizer {
  const HfFolder& folder;
  json config;  // tokenizer_config.json, or an empty object
  json vocab;   // vocab.json

  // The id of the special piece under `key` ("unk_token": a string, or an object with "content"),
  // `fallback` when the tokenizer names none.
  int32_t special_id(const char* key, const char* fallback) const {
    std::string name = fallback;
    if (config.contains(key) && config[key].is_string()) {
      name = config[key].get<std::string>();
    } else if (config.contains(key) && config[key].is_object() && config[key].contains("content")) {
      const json& content = config[key]["content"];
      TFM_CHECK(content.is_string(), "import hf: ", folder.tokenizer.string(), ": '", key,
                "'.content must be a string, got ", json_quote(content));
      name = content.get<std::string>();
    }
    const auto it = vocab.find(name);
    TFM_CHECK(it != vocab.end(), "import hf: ", folder.vocab.string(), " has no piece '", name, "' (the ", key, ")");
    return it->get<int32_t>();
  }
};

HfTokenizer read_tokenizer(const HfFolder& f) {
  HfTokenizer t{f, fs::exists(f.tokenizer) ? read_hf_json(f.tokenizer) : json::object(), json()};
  TFM_CHECK(!hf_field<bool>(t.config, "separate_vocabs", false, f.tokenizer), "import hf: ", f.tokenizer.string(),
            ": separate source and target vocabularies are not supported yet");
  t.vocab = read_hf_json(f.vocab);
  return t;
}

// vocab.json with the SentencePiece models; sets the configuration's unk_id, and checks its size,
// eos and pad against the tokenizer's.
Vocab read_vocabulary(const HfFolder& f, ModelConfig& c) {
  const HfTokenizer tokenizer = read_tokenizer(f);
  std::vector<std::string> pieces = pieces_by_id(tokenizer.vocab, f.vocab);
  TFM_CHECK(static_cast<int64_t>(pieces.size()) == c.vocab_size, "import hf: ", f.vocab.string(), " has ",
            pieces.size(), " pieces but config.json's vocab_size is ", c.vocab_size);
  c.unk_id = tokenizer.special_id("unk_token", "<unk>");
  for (const auto& [key, fallback, id, field_name] :
       {std::tuple{"eos_token", "</s>", c.eos_id, "eos_token_id"}, {"pad_token", "<pad>", c.pad_id, "pad_token_id"}}) {
    const int32_t tokenizer_id = tokenizer.special_id(key, fallback);
    TFM_CHECK(tokenizer_id == id, "import hf: the tokenizer's ", key, " is id ", tokenizer_id, " but config.json's ",
              field_name, " is ", id);
  }
  for (const fs::path* spm : {&f.source_spm, &f.target_spm})
    TFM_CHECK(fs::exists(*spm), "import hf: '", spm->string(), "' does not exist");
  try {
    return Vocab::from_pieces(std::move(pieces), read_file(f.source_spm.string()), read_file(f.target_spm.string()),
                              c.unk_id, {c.eos_id, c.unk_id, c.pad_id}, cat("'", f.source_spm.string(), "'"),
                              cat("'", f.target_spm.string(), "'"));
  } catch (const Error& e) {
    throw Error(cat("import hf: ", f.name, ": ", e.what()));
  }
}

// Whether t is the table transformers' MarianSinusoidalPositionalEmbedding stores: row p holds
// sin(p·r_i) in its first half and cos(p·r_i) in its second, r_i = 10000^(−2i/D), within float32's
// rounding of the angle.
bool holds_sinusoids(const Tensor& t, int64_t d_model) {
  if (t.shape().rank() != 2 || t.shape()[1] != d_model || d_model % 2 != 0) return false;
  const std::vector<double> v = t.to_doubles();
  const int64_t half = d_model / 2;
  for (int64_t p = 0; p < t.shape()[0]; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, 2.0 * static_cast<double>(i) / d_model);
      if (std::abs(v[p * d_model + i] - std::sin(angle)) > 1e-3 ||
          std::abs(v[p * d_model + half + i] - std::cos(angle)) > 1e-3)
        return false;
    }
  return true;
}

// Every tensor of the file that the conversion did not read is accounted for: a copy of a tied
// embedding must equal it, a position table must hold the sinusoids the model computes, and any
// other is refused, naming it (the weights of a layer that config.json does not count, say).
void check_unread(HfWeights& w, const ModelConfig& c, const fs::path& path) {
  const auto yes = [](bool b) { return b ? "true" : "false"; };
  for (const std::string& name : w.unread()) {
    const bool embed_copy = c.tie_source_target && (name == "model.shared.weight" ||
                                                    name == "model.encoder.embed_tokens.weight" ||
                                                    name == "model.decoder.embed_tokens.weight");
    if (embed_copy || (c.tie_output && name == "lm_head.weight")) {
      const Tensor& tied = w.converted(c.tie_source_target ? "embed.weight" : "decoder.embed.weight");
      const Tensor copy = w.get(name);
      TFM_CHECK(copy.shape() == tied.shape() && std::memcmp(copy.raw(), tied.raw(), tied.bytes()) == 0,
                "import hf: ", path.string(), ": tensor '", name, "' differs from the embedding it is tied to (",
                embed_copy ? "share_encoder_decoder_embeddings" : "tie_word_embeddings", " true in config.json)");
    } else if (name == "model.encoder.embed_positions.weight" || name == "model.decoder.embed_positions.weight") {
      TFM_CHECK(holds_sinusoids(w.get(name), c.d_model), "import hf: ", path.string(), ": tensor '", name,
                "' does not hold the sinusoidal positions the model computes (learned positions are not supported)");
    } else {
      throw Error(cat("import hf: ", path.string(), ": tensor '", name,
                      "' is not part of the model config.json describes (encoder_layers ", c.encoder_layers,
                      ", decoder_layers ", c.decoder_layers, ", share_encoder_decoder_embeddings ",
                      yes(c.tie_source_target), ", tie_word_embeddings ", yes(c.tie_output),
                      "): are config.json and the weights of one model?"));
    }
  }
}

// Every parameter of the model the configuration describes, from model.safetensors; every other
// tensor accounted for.
std::vector<NamedTensor> convert_weights(const HfFolder& f, const ModelConfig& c) {
  const HfCheckpoint file = HfCheckpoint::open(f.dir);
  HfWeights w(file);
  if (c.tie_source_target) {
    w.put("embed.weight",
          w.first_of({"model.shared.weight", "model.decoder.embed_tokens.weight", "model.encoder.embed_tokens.weight"}));
  } else {
    w.put("encoder.embed.weight", w.get("model.encoder.embed_tokens.weight"));
    w.put("decoder.embed.weight", w.get("model.decoder.embed_tokens.weight"));
  }
  if (!c.tie_output) w.put("output.weight", w.get("lm_head.weight"));
  const Tensor bias = w.get("final_logits_bias");  // [1, V]
  w.put("output.bias", bias.view({bias.numel()}));
  for_each_layer_param(c, [&](const LayerParam& p) { w.put(p.name, w.get(hf_seq2seq_layer_param(p))); });
  check_unread(w, c, file.source());
  return w.take();
}
}  // namespace

ImportedModel import_hf_marian(const HfFolderInfo& info) {
  const HfFolder folder(info.dir.string());
  ModelConfig c = model_config(info.config, info.config_path);
  ImportedModel m;
  m.config = c;
  m.vocab = read_vocabulary(folder, m.config);
  m.config.validate();
  m.tensors = convert_weights(folder, m.config);
  m.provenance = hf_provenance(info, "huggingface-marian");
  m.notes.push_back("positions: sines then cosines at rates 10000^(-2i/D), as transformers' MarianSinusoidalPositionalEmbedding");
  return m;
}

}  // namespace tfm
