#pragma once
// What the Hugging Face importers share (src/import/hf_*.cc): reading a folder's JSON files and
// config.json's fields with errors naming the file, the field and its value; the checkpoint's
// tensors from model.safetensors or the shards a model.safetensors.index.json lists, in any float
// dtype, as float32; and which of them a conversion used, so that none is dropped silently.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_text.h"
#include "import/import.h"
#include "import/tensors.h"
#include "io/safetensors.h"

namespace tfm {

// A JSON file of the folder (config.json, tokenizer_config.json, ...), parsed; throws naming it if
// it is absent or not JSON.
nlohmann::json read_hf_json(const std::filesystem::path& path);

// A config.json field: `fallback` when absent or null; else of the fallback's type (an integer in
// range, a bool, a number or a string), or an error naming `where`, the key and the value.
template <class T>
T hf_field(const nlohmann::json& config, const char* key, const T& fallback, const std::filesystem::path& where) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  try {
    if constexpr (std::is_same_v<T, bool>) {
      TFM_CHECK(it->is_boolean(), "must be true or false");
    } else if constexpr (std::is_integral_v<T>) {
      TFM_CHECK(it->is_number_integer(), "must be an integer");
      // nlohmann's get<T> wraps what T cannot hold (2^32 + 314 read as 314).
      const bool fits = it->is_number_unsigned()
                            ? it->template get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                            : it->template get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                  it->template get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max());
      TFM_CHECK(fits, "is out of range (", std::numeric_limits<T>::min(), " to ", std::numeric_limits<T>::max(), ")");
    } else if constexpr (std::is_floating_point_v<T>) {
      TFM_CHECK(it->is_number(), "must be a number");
    } else {
      TFM_CHECK(it->is_string(), "must be a string");
    }
    return it->template get<T>();
  } catch (const std::exception& e) {
    throw Error(cat("import hf: ", where.string(), ": '", key, "' ", e.what(), ", got ", json_quote(*it)));
  }
}

// A config.json field that must be present.
template <class T>
T hf_required(const nlohmann::json& config, const char* key, const std::filesystem::path& where) {
  TFM_CHECK(config.contains(key) && !config[key].is_null(), "import hf: ", where.string(), " has no '", key, "'");
  return hf_field<T>(config, key, T{}, where);
}

// Refuses a field whose value changes the computation in a way not supported: present, not null,
// and not `expected` (e.g. "rope_scaling" anything but null). `why` ends the message.
void hf_refuse_unless(const nlohmann::json& config, const char* key, const nlohmann::json& expected,
                      const std::filesystem::path& where, const std::string& why);

// The tensors of a checkpoint: model.safetensors, or the shards named by
// model.safetensors.index.json's "weight_map" (each tensor in the shard the map names). A folder
// with only pytorch_model.bin is told how to convert it.
class HfCheckpoint {
 public:
  static HfCheckpoint open(const std::filesystem::path& dir);
  bool has(const std::string& name) const { return where_.count(name) > 0; }
  std::vector<std::string> names() const;  // sorted
  DType dtype(const std::string& name) const;  // as read (F16 and BF16 read as F32)
  Shape shape(const std::string& name) const;  // from the header, without reading the tensor
  Tensor tensor(const std::string& name) const;
  const std::string& source() const { return source_; }  // the file or the index, for messages
  const std::string& file_of(const std::string& name) const;

 private:
  std::string source_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;  // tensor → files_ index
};

// Reads a checkpoint's tensors as float32 under this project's names, in the order asked for,
// noting which it read; then accounts for every tensor it did not read.
class HfWeights {
 public:
  explicit HfWeights(const HfCheckpoint& checkpoint) : file_(checkpoint) {}

  bool has(const std::string& name) const { return file_.has(name); }
  // A weight, of a float dtype (F32, F64, or F16 and BF16, which read as F32): integers are
  // refused, not converted.
  Tensor get(const std::string& name);
  bool used(const std::string& name) const { return used_.count(name) > 0; }
  // Marks a tensor read without converting it (a buffer such as BERT's position_ids).
  void skip(const std::string& name) { used_.insert(name); }
  // The converted tensor named `ours` ("embed.weight").
  const Tensor& converted(const std::string& ours) const;
  // The first of `names` the checkpoint has.
  Tensor first_of(std::initializer_list<const char*> names);
  void put(const std::string& ours, Tensor t) { tensors_.push_back({ours, std::move(t)}); }
  // A copy of a tied weight (lm_head.weight beside the embedding it is tied to) must equal it.
  void check_copy(const std::string& name, const std::string& ours, const char* tied_by);
  // The tensors not read, sorted; an importer refuses them, naming the first and what config.json
  // says (`description`), unless it accounted for them.
  std::vector<std::string> unread() const;
  void refuse_unread(const std::string& description) const;
  std::vector<NamedTensor> take() { return std::move(tensors_); }
  const HfCheckpoint& checkpoint() const { return file_; }

 private:
  const HfCheckpoint& file_;
  std::vector<NamedTensor> tensors_;
  std::set<std::string> used_;
};

// The tensor of an encoder-decoder layer parameter as BART-style models (MarianMT, M2M-100) name it:
// "model.decoder.layers.2.encoder_attn.q_proj.weight", "model.encoder.layers.0.fc1.bias",
// "model.encoder.layers.0.final_layer_norm.weight".
std::string hf_seq2seq_layer_param(const LayerParam& p);

// The sizes of a BART-style encoder-decoder's config.json (d_model, encoder_layers, decoder_layers,
// encoder_attention_heads, encoder_ffn_dim, vocab_size); the decoder's heads and feed-forward width
// must equal the encoder's.
void hf_read_seq2seq_sizes(const nlohmann::json& config, const std::filesystem::path& path, ModelConfig& c);

// One architecture's importer: config.json (already read) and the folder → the model and its
// vocabulary. `architecture` is config.json's "architectures"[0] (or "" when it has none).
struct HfFolderInfo {
  std::filesystem::path dir;
  std::filesystem::path config_path;
  nlohmann::json config;
  std::string architecture;
  std::string model_type;
  // A sentence-transformers folder (modules.json) this is the Transformer module of, else empty:
  // its Pooling and Normalize modules set the model's default pooling and normalization.
  std::filesystem::path sentence_transformers;
};
// Each fills config, tensors, provenance and notes; import_hf_marian (MarianMT, whose vocabulary
// is vocab.json with two SentencePiece models) and the translators of their own vocabularies fill
// the vocabulary too, the others leave it to hf_vocabulary.
ImportedModel import_hf_marian(const HfFolderInfo& folder);
// GPT-2 (hf_gpt2.cc); Llama, Qwen2 and Mistral, by the folder's model_type (hf_llama.cc).
ImportedModel import_hf_gpt2(const HfFolderInfo& folder);
ImportedModel import_hf_llama(const HfFolderInfo& folder);
// BertModel and BertForMaskedLM (src/import/hf_bert.cc): an encoder-only model.
ImportedModel import_hf_bert(const HfFolderInfo& folder);

// A sentence-transformers folder (src/import/hf_sentence_transformers.cc): the folder of its
// Transformer module (modules.json's path, "" for `dir` itself), and the default pooling and
// normalization of `embed` its other modules set on the imported model (other modules refused).
std::filesystem::path sentence_transformers_model_dir(const std::filesystem::path& dir);
void apply_sentence_transformers(const std::filesystem::path& dir, ImportedModel& m);

// The folder's tokenizer (tokenizer.json, else tokenizer.model or vocab.txt) as this project's
// vocabulary; checks it against the configuration (its size at most vocab_size, the special ids it
// names) and sets the configuration's unk_id.
Vocab hf_vocabulary(const HfFolderInfo& folder, ModelConfig& config);

// What import_hf does before reading the vocabulary of an architecture whose importer does not
// read it (vocab empty then): for checks of the weights and configuration alone.
ImportedModel import_hf_without_vocabulary(const std::string& dir);

// provenance common to every architecture: the format, the folder, transformers' version and name.
nlohmann::json hf_provenance(const HfFolderInfo& folder, const std::string& format);

}  // namespace tfm
