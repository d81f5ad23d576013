// Hugging Face MarianMT folders (transformers' MarianMTModel, as converted from OPUS-MT by
// transformers' convert_marian_to_pytorch or trained with transformers): config.json, the weights
// in model.safetensors, vocab.json, source.spm and target.spm.
#include <cstdint>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "import/import.h"
#include "import/tensors.h"
#include "io/atomic_file.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& path) {
  TFM_CHECK(fs::exists(path), "import hf: '", path.string(), "' does not exist");
  try {
    return json::parse(read_file(path.string()));
  } catch (const json::exception& e) {
    throw Error(cat("import hf: '", path.string(), "' is not valid JSON: ", e.what()));
  }
}

// A config.json field: `fallback` when absent or null; else of the fallback's type.
template <class T>
T field(const json& config, const char* key, const T& fallback, const fs::path& where) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  try {
    if constexpr (std::is_same_v<T, bool>) {
      TFM_CHECK(it->is_boolean(), "must be true or false");
    } else if constexpr (std::is_integral_v<T>) {
      TFM_CHECK(it->is_number_integer(), "must be an integer");
      // nlohmann's get<T> wraps what T cannot hold (2^32 + 314 read as 314).
      const bool fits = it->is_number_unsigned()
                            ? it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                            : it->get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                  it->get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max());
      TFM_CHECK(fits, "is out of range (", std::numeric_limits<T>::min(), " to ", std::numeric_limits<T>::max(), ")");
    } else if constexpr (std::is_floating_point_v<T>) {
      TFM_CHECK(it->is_number(), "must be a number");
    } else {
      TFM_CHECK(it->is_string(), "must be a string");
    }
    return it->get<T>();
  } catch (const std::exception& e) {
    throw Error(cat("import hf: ", where.string(), ": '", key, "' ", e.what(), ", got ", it->dump()));
  }
}

template <class T>
T required(const json& config, const char* key, const fs::path& where) {
  TFM_CHECK(config.contains(key) && !config[key].is_null(), "import hf: ", where.string(), " has no '", key, "'");
  return field<T>(config, key, T{}, where);
}
}  // namespace

ImportedModel import_hf(const std::string& dir_name) {
  const fs::path dir(dir_name);
  TFM_CHECK(fs::is_directory(dir), "import hf: '", dir_name, "' is not a folder");
  const fs::path config_path = dir / "config.json";
  const json config = read_json(config_path);
  TFM_CHECK(config.is_object(), "import hf: ", config_path.string(), " is not a JSON object");
  const std::string type = field<std::string>(config, "model_type", "", config_path);
  TFM_CHECK(type == "marian", "import hf: ", config_path.string(), ": model_type '", type,
            "' is not supported (marian is: MarianMTModel, OPUS-MT)");

  ImportedModel m;
  ModelConfig& c = m.config;
  c.d_model = required<int64_t>(config, "d_model", config_path);
  c.encoder_layers = required<int64_t>(config, "encoder_layers", config_path);
  c.decoder_layers = required<int64_t>(config, "decoder_layers", config_path);
  c.heads = required<int64_t>(config, "encoder_attention_heads", config_path);
  c.d_ff = required<int64_t>(config, "encoder_ffn_dim", config_path);
  c.vocab_size = required<int64_t>(config, "vocab_size", config_path);
  auto same = [&](const char* key, int64_t value) {
    const int64_t v = field<int64_t>(config, key, value, config_path);
    TFM_CHECK(v == value, "import hf: ", config_path.string(), ": '", key, "' is ", v,
              " but the encoder's is ", value, "; encoder and decoder of different shapes are not supported");
  };
  same("decoder_attention_heads", c.heads);
  same("decoder_ffn_dim", c.d_ff);
  const int64_t target_vocab = field<int64_t>(config, "decoder_vocab_size", c.vocab_size, config_path);
  TFM_CHECK(target_vocab == c.vocab_size, "import hf: ", config_path.string(), ": decoder_vocab_size ", target_vocab,
            " differs from vocab_size ", c.vocab_size, "; separate source and target vocabularies are not supported yet");
  const std::string activation = field<std::string>(config, "activation_function", "gelu", config_path);
  if (activation == "relu" || activation == "swish" || activation == "gelu") c.activation = activation;
  else if (activation == "silu") c.activation = "swish";
  else
    throw Error(cat("import hf: ", config_path.string(), ": activation_function '", activation,
                    "' is not supported (relu, swish, silu, gelu are)"));
  for (const char* flag : {"normalize_before", "normalize_embedding", "add_bias_logits", "add_final_layer_norm"})
    TFM_CHECK(!field<bool>(config, flag, false, config_path), "import hf: ", config_path.string(), ": '", flag,
              "' true is not supported");
  TFM_CHECK(field<bool>(config, "static_position_embeddings", true, config_path), "import hf: ",
            config_path.string(), ": learned positions (static_position_embeddings false) are not supported");
  c.scale_embeddings = field<bool>(config, "scale_embedding", false, config_path);
  c.tie_source_target = field<bool>(config, "share_encoder_decoder_embeddings", true, config_path);
  c.tie_output = field<bool>(config, "tie_word_embeddings", true, config_path);
  c.output_bias = true;  // MarianMTModel's final_logits_bias
  c.positions = "sin_cos";
  c.position_frequencies = "paper";  // MarianSinusoidalPositionalEmbedding: 10000^(−2i/D)
  c.layer_norm_eps = 1e-5;           // torch.nn.LayerNorm's
  c.pre_norm = false;
  c.dropout = field<double>(config, "dropout", 0.1, config_path);
  c.attention_dropout = field<double>(config, "attention_dropout", 0.0, config_path);
  c.embedding_dropout = c.dropout;
  c.pad_id = required<int32_t>(config, "pad_token_id", config_path);
  c.eos_id = required<int32_t>(config, "eos_token_id", config_path);
  c.bos_id = field<int32_t>(config, "decoder_start_token_id", c.pad_id, config_path);

  // The vocabulary: vocab.json maps each piece to its id.
  const fs::path vocab_path = dir / "vocab.json";
  const json tokenizer = fs::exists(dir / "tokenizer_config.json") ? read_json(dir / "tokenizer_config.json") : json::object();
  TFM_CHECK(!field<bool>(tokenizer, "separate_vocabs", false, dir / "tokenizer_config.json"), "import hf: ",
            (dir / "tokenizer_config.json").string(), ": separate source and target vocabularies are not supported yet");
  const json vocab = read_json(vocab_path);
  TFM_CHECK(vocab.is_object(), "import hf: ", vocab_path.string(), " is not a JSON object of pieces and ids");
  std::vector<std::string> pieces(vocab.size());
  std::vector<bool> seen(vocab.size(), false);
  for (const auto& [piece, id] : vocab.items()) {
    TFM_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < int64_t(vocab.size()),
              "import hf: ", vocab_path.string(), ": the id of '", piece, "' is ", id.dump(), ", not in [0, ",
              vocab.size(), ")");
    const auto i = static_cast<size_t>(id.get<int64_t>());
    TFM_CHECK(!seen[i], "import hf: ", vocab_path.string(), ": id ", i, " is given twice (to '", pieces[i], "' and '",
              piece, "')");
    seen[i] = true;
    pieces[i] = piece;
  }
  TFM_CHECK(static_cast<int64_t>(pieces.size()) == c.vocab_size, "import hf: ", vocab_path.string(), " has ",
            pieces.size(), " pieces but config.json's vocab_size is ", c.vocab_size);
  auto special = [&](const char* key, const char* fallback) -> int32_t {
    std::string name = fallback;
    if (tokenizer.contains(key) && tokenizer[key].is_string()) {
      name = tokenizer[key].get<std::string>();
    } else if (tokenizer.contains(key) && tokenizer[key].is_object() && tokenizer[key].contains("content")) {
      const json& content = tokenizer[key]["content"];
      TFM_CHECK(content.is_string(), "import hf: ", (dir / "tokenizer_config.json").string(), ": '", key,
                "'.content must be a string, got ", content.dump());
      name = content.get<std::string>();
    }
    const auto it = vocab.find(name);
    TFM_CHECK(it != vocab.end(), "import hf: ", vocab_path.string(), " has no piece '", name, "' (the ", key, ")");
    return it->get<int32_t>();
  };
  c.unk_id = special("unk_token", "<unk>");
  for (const auto& [key, fallback, id, field_name] :
       {std::tuple{"eos_token", "</s>", c.eos_id, "eos_token_id"}, {"pad_token", "<pad>", c.pad_id, "pad_token_id"}}) {
    const int32_t tokenizer_id = special(key, fallback);
    TFM_CHECK(tokenizer_id == id, "import hf: the tokenizer's ", key, " is id ", tokenizer_id, " but config.json's ",
              field_name, " is ", id);
  }
  for (const char* spm : {"source.spm", "target.spm"})
    TFM_CHECK(fs::exists(dir / spm), "import hf: '", (dir / spm).string(), "' does not exist");
  try {
    m.vocab = Vocab::from_pieces(pieces, read_file((dir / "source.spm").string()), read_file((dir / "target.spm").string()),
                                 c.unk_id, {c.eos_id, c.unk_id, c.pad_id}, cat("'", (dir / "source.spm").string(), "'"),
                                 cat("'", (dir / "target.spm").string(), "'"));
  } catch (const Error& e) {
    throw Error(cat("import hf: ", dir_name, ": ", e.what()));
  }
  c.validate();

  // The weights.
  const fs::path weights = dir / "model.safetensors";
  if (!fs::exists(weights)) {
    TFM_CHECK(!fs::exists(dir / "pytorch_model.bin"), "import hf: '", dir_name,
              "' has its weights only as pytorch_model.bin (a Python pickle, which this program does not read); "
              "convert it once with transformers: MarianMTModel.from_pretrained(DIR).save_pretrained(DIR) writes "
              "model.safetensors");
    throw Error(cat("import hf: '", weights.string(), "' does not exist"));
  }
  const SafetensorsFile file = SafetensorsFile::read(weights.string());
  auto get = [&](const std::string& name) -> Tensor {
    TFM_CHECK(file.has(name), "import hf: ", weights.string(), " has no tensor '", name, "'");
    Tensor t = file.tensor(name);
    return t.dtype() == DType::F32 ? t : t.to(DType::F32);
  };
  auto first_of = [&](std::initializer_list<const char*> names) -> Tensor {
    for (const char* n : names)
      if (file.has(n)) return get(n);
    std::string list;
    for (const char* n : names) list += cat(list.empty() ? "" : ", ", "'", n, "'");
    throw Error(cat("import hf: ", weights.string(), " has none of ", list));
  };
  auto put = [&](const std::string& name, Tensor t) { m.tensors.push_back({name, std::move(t)}); };
  if (c.tie_source_target) {
    put("embed.weight", first_of({"model.shared.weight", "model.decoder.embed_tokens.weight", "model.encoder.embed_tokens.weight"}));
  } else {
    put("encoder.embed.weight", get("model.encoder.embed_tokens.weight"));
    put("decoder.embed.weight", get("model.decoder.embed_tokens.weight"));
  }
  if (!c.tie_output) put("output.weight", get("lm_head.weight"));
  {
    Tensor bias = get("final_logits_bias");  // [1, V]
    put("output.bias", bias.view({bias.numel()}));
  }
  auto attention = [&](const std::string& ours, const std::string& theirs) {
    for (const char* p : {"q", "k", "v", "out"})
      for (const char* w : {"weight", "bias"})
        put(cat(ours, ".", p, "_proj.", w), get(cat(theirs, ".", p, "_proj.", w)));
  };
  auto norm = [&](const std::string& ours, const std::string& theirs) {
    for (const char* w : {"weight", "bias"}) put(cat(ours, ".", w), get(cat(theirs, ".", w)));
  };
  auto ffn = [&](const std::string& ours, const std::string& theirs) {
    for (const char* fc : {"fc1", "fc2"})
      for (const char* w : {"weight", "bias"}) put(cat(ours, ".ffn.", fc, ".", w), get(cat(theirs, ".", fc, ".", w)));
  };
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    const std::string ours = cat("encoder.layers.", i), theirs = cat("model.encoder.layers.", i);
    attention(ours + ".self_attn", theirs + ".self_attn");
    norm(ours + ".self_attn_norm", theirs + ".self_attn_layer_norm");
    ffn(ours, theirs);
    norm(ours + ".ffn_norm", theirs + ".final_layer_norm");
  }
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    const std::string ours = cat("decoder.layers.", i), theirs = cat("model.decoder.layers.", i);
    attention(ours + ".self_attn", theirs + ".self_attn");
    norm(ours + ".self_attn_norm", theirs + ".self_attn_layer_norm");
    attention(ours + ".cross_attn", theirs + ".encoder_attn");
    norm(ours + ".cross_attn_norm", theirs + ".encoder_attn_layer_norm");
    ffn(ours, theirs);
    norm(ours + ".ffn_norm", theirs + ".final_layer_norm");
  }
  m.provenance = {{"format", "huggingface-marian"},
                  {"path", fs::absolute(dir).lexically_normal().string()},
                  {"transformers_version", field<std::string>(config, "transformers_version", "", config_path)},
                  {"name_or_path", field<std::string>(config, "_name_or_path", "", config_path)}};
  m.notes.push_back("positions: sines then cosines at rates 10000^(-2i/D), as transformers' MarianSinusoidalPositionalEmbedding");
  return m;
}

}  // namespace tfm
