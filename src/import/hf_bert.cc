// Hugging Face BERT folders (transformers' BertModel and BertForMaskedLM, and the Transformer module
// of a sentence-transformers folder): config.json and the weights as an encoder-only model with
// learned positions, token types, an embedding norm and post-norm layers; the masked-LM head.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <tuple>

#include "core/error.h"
#include "core/json_text.h"
#include "import/hf_common.h"
#include "import/tensors.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// hidden_act → this project's activation; exact-erf gelu and its tanh approximations, relu, silu.
std::string activation(const json& config, const fs::path& path) {
  const std::string act = hf_field<std::string>(config, "hidden_act", "gelu", path);
  if (act == "gelu" || act == "relu") return act;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") return "gelu_tanh";
  if (act == "silu" || act == "swish") return "swish";
  throw Error(cat("import hf: ", path.string(), ": hidden_act '", act,
                  "' is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu, silu are)"));
}

// What BERT computes that the family does not: refused naming the field.
void refuse_unsupported(const json& config, const fs::path& path) {
  hf_refuse_unless(config, "position_embedding_type", "absolute", path,
                   "only learned absolute positions (\"absolute\") are supported");
  hf_refuse_unless(config, "is_decoder", false, path, "a BERT decoder (causal attention) is not supported");
  hf_refuse_unless(config, "add_cross_attention", false, path, "cross-attention in BERT is not supported");
}

// config.json → an encoder-only ModelConfig (special ids but pad_id from the tokenizer, later).
ModelConfig bert_config(const HfFolderInfo& f) {
  const json& j = f.config;
  const fs::path& path = f.config_path;
  refuse_unsupported(j, path);
  ModelConfig c;
  c.architecture = "encoder-only";
  c.d_model = hf_required<int64_t>(j, "hidden_size", path);
  c.encoder_layers = hf_required<int64_t>(j, "num_hidden_layers", path);
  c.decoder_layers = 0;
  c.heads = hf_required<int64_t>(j, "num_attention_heads", path);
  c.d_ff = hf_required<int64_t>(j, "intermediate_size", path);
  c.vocab_size = hf_required<int64_t>(j, "vocab_size", path);
  c.positions = "learned";
  c.max_positions = hf_field<int64_t>(j, "max_position_embeddings", 512, path);
  c.position_offset = 0;
  c.token_types = hf_field<int64_t>(j, "type_vocab_size", 2, path);
  c.layer_norm_eps = hf_field<double>(j, "layer_norm_eps", 1e-12, path);
  c.activation = activation(j, path);
  c.pre_norm = false;  // BERT: LayerNorm(x + F(x))
  c.embedding_norm = true;
  c.scale_embeddings = false;
  c.dropout = c.embedding_dropout = hf_field<double>(j, "hidden_dropout_prob", 0.1, path);
  c.attention_dropout = hf_field<double>(j, "attention_probs_dropout_prob", 0.1, path);
  c.pad_id = hf_field<int32_t>(j, "pad_token_id", 0, path);
  c.mlm_head = f.architecture == "BertForMaskedLM";
  c.output_bias = c.mlm_head;
  c.tie_output = !c.mlm_head || hf_field<bool>(j, "tie_word_embeddings", true, path);
  return c;
}

// The id of `piece` in the folder's tokenizer.json (added tokens, else the model's vocabulary) or
// vocab.txt (its line), or -1.
int32_t piece_id(const fs::path& dir, const std::string& piece) {
  if (fs::exists(dir / "tokenizer.json")) {
    const json t = read_hf_json(dir / "tokenizer.json");
    if (t.contains("added_tokens") && t["added_tokens"].is_array())
      for (const json& a : t["added_tokens"])
        if (a.is_object() && a.value("content", "") == piece && a.contains("id") && a["id"].is_number_integer())
          return a["id"].get<int32_t>();
    if (t.contains("model") && t["model"].is_object() && t["model"].contains("vocab") &&
        t["model"]["vocab"].is_object() && t["model"]["vocab"].contains(piece) &&
        t["model"]["vocab"][piece].is_number_integer())
      return t["model"]["vocab"][piece].get<int32_t>();
    return -1;
  }
  // Lines end at "\n", "\r\n" or "\r", as Python's text files (and HfTokenizer) read them.
  std::ifstream vocab(dir / "vocab.txt");
  std::string line;
  int32_t id = 0;
  while (std::getline(vocab, line)) {
    for (size_t b = 0; b <= line.size();) {
      const size_t e = std::min(line.find('\r', b), line.size());
      if (std::string_view(line).substr(b, e - b) == piece) return id;
      ++id;
      b = e + 1;
      if (b == line.size() && e < line.size()) break;  // the "\r" of a "\r\n"
    }
  }
  return -1;
}

// A special token's name in tokenizer_config.json (a string, or an object with "content").
std::string special_name(const fs::path& dir, const char* key, const char* fallback) {
  const fs::path path = dir / "tokenizer_config.json";
  if (!fs::exists(path)) return fallback;
  const json t = read_hf_json(path);
  if (t.contains(key) && t[key].is_object()) return hf_field<std::string>(t[key], "content", fallback, path);
  return hf_field<std::string>(t, key, fallback, path);
}

// The ids the encoder wraps a text in (bos [CLS], eos [SEP]) and unk, from the folder's tokenizer
// (config.json names none of them).
void set_special_ids(const fs::path& dir, ModelConfig& c) {
  for (const auto& [key, fallback, id] : {std::tuple{"cls_token", "[CLS]", &c.bos_id},
                                          {"sep_token", "[SEP]", &c.eos_id}, {"unk_token", "[UNK]", &c.unk_id}}) {
    const std::string name = special_name(dir, key, fallback);
    *id = piece_id(dir, name);
    TFM_CHECK(*id >= 0, "import hf: ", dir.string(), ": the tokenizer (tokenizer.json or vocab.txt) has no '", name,
              "' (the ", key, ")");
  }
}

// transformers' name of a layer parameter: "encoder.layer.0.attention.self.query.weight", ...
std::string hf_layer_param(const std::string& prefix, const LayerParam& p) {
  const std::string layer = cat(prefix, "encoder.layer.", p.layer, ".");
  const char* w = p.weight ? "weight" : "bias";
  switch (p.block) {
    case LayerBlock::kSelfAttention: {
      if (p.part == "out") return cat(layer, "attention.output.dense.", w);
      const char* which = p.part == "q" ? "query" : p.part == "k" ? "key" : "value";
      return cat(layer, "attention.self.", which, ".", w);
    }
    case LayerBlock::kSelfAttentionNorm: return cat(layer, "attention.output.LayerNorm.", w);
    case LayerBlock::kFfn: return cat(layer, p.part == "fc1" ? "intermediate.dense." : "output.dense.", w);
    case LayerBlock::kFfnNorm: return cat(layer, "output.LayerNorm.", w);
    default: return "?";
  }
}

// A tensor of the checkpoint; a LayerNorm's weight and bias under their older names too (gamma and
// beta, as Google's converted checkpoints such as bert-base-uncased store them).
Tensor get(HfWeights& w, const std::string& name) {
  if (w.has(name) || name.find("LayerNorm.") == std::string::npos) return w.get(name);
  const bool weight = name.ends_with(".weight");
  const std::string old = name.substr(0, name.rfind('.') + 1) + (weight ? "gamma" : "beta");
  return w.has(old) ? w.get(old) : w.get(name);
}

// The masked-LM head: transform (dense, activation, LayerNorm), decoder tied to the word embeddings
// (or its own with tie_word_embeddings false), bias.
void convert_mlm_head(HfWeights& w, const ModelConfig& c) {
  w.put("mlm_head.dense.weight", w.get("cls.predictions.transform.dense.weight"));
  w.put("mlm_head.dense.bias", w.get("cls.predictions.transform.dense.bias"));
  w.put("mlm_head.norm.weight", get(w, "cls.predictions.transform.LayerNorm.weight"));
  w.put("mlm_head.norm.bias", get(w, "cls.predictions.transform.LayerNorm.bias"));
  w.put("output.bias", w.get("cls.predictions.bias"));
  if (!c.tie_output) w.put("output.weight", w.get("cls.predictions.decoder.weight"));
  else if (w.has("cls.predictions.decoder.weight"))
    w.check_copy("cls.predictions.decoder.weight", "embed.weight", "tie_word_embeddings");
  if (w.has("cls.predictions.decoder.bias")) {  // the same parameter as cls.predictions.bias
    const Tensor copy = w.get("cls.predictions.decoder.bias");
    const Tensor& bias = w.converted("output.bias");
    TFM_CHECK(copy.shape() == bias.shape() && std::memcmp(copy.raw(), bias.raw(), bias.bytes()) == 0, "import hf: ",
              w.checkpoint().file_of("cls.predictions.decoder.bias"),
              ": tensor 'cls.predictions.decoder.bias' differs from 'cls.predictions.bias', which it is in BERT");
  }
}

// Heads that embedding does not use and the family has no place for: the pooler (a tanh dense
// layer on [CLS], BertModel's pooler_output) and the next-sentence head of pretraining checkpoints.
// Skipped, each with a note.
void skip_unused_heads(HfWeights& w, const std::string& prefix, std::vector<std::string>& notes) {
  bool pooler = false, nsp = false;
  for (const std::string& name : w.unread()) {
    if (name.starts_with(prefix + "pooler.dense.")) pooler = true, w.skip(name);
    if (name.starts_with("cls.seq_relationship.")) nsp = true, w.skip(name);
  }
  if (pooler)
    notes.push_back("the pooler (pooler.dense, BertModel's pooler_output: tanh of a dense layer on [CLS]) is not "
                    "imported: embeddings pool the last hidden states (embed --pooling cls is [CLS]'s state "
                    "without it)");
  if (nsp) notes.push_back("the next-sentence-prediction head (cls.seq_relationship) is not imported");
}

// Every parameter from the checkpoint; every other tensor accounted for.
std::vector<NamedTensor> convert_weights(const HfFolderInfo& f, const ModelConfig& c, std::vector<std::string>& notes) {
  const HfCheckpoint file = HfCheckpoint::open(f.dir);
  HfWeights w(file);
  // BertModel's tensors have no prefix; those of BertForMaskedLM and pretraining checkpoints "bert.".
  const std::string prefix = file.has("bert.embeddings.word_embeddings.weight") ? "bert." : "";
  const std::string e = prefix + "embeddings.";
  w.put("embed.weight", w.get(e + "word_embeddings.weight"));
  w.put("positions.weight", w.get(e + "position_embeddings.weight"));
  w.put("token_types.weight", w.get(e + "token_type_embeddings.weight"));
  w.put("embed_norm.weight", get(w, e + "LayerNorm.weight"));
  w.put("embed_norm.bias", get(w, e + "LayerNorm.bias"));
  for (const char* buffer : {"position_ids", "token_type_ids"})
    if (w.has(e + buffer)) w.skip(e + buffer);
  for_each_layer_param(c, [&](const LayerParam& p) { w.put(p.name, get(w, hf_layer_param(prefix, p))); });
  if (c.mlm_head) convert_mlm_head(w, c);
  skip_unused_heads(w, prefix, notes);
  w.refuse_unread(cat(f.architecture.empty() ? "BERT" : f.architecture, ", num_hidden_layers ", c.encoder_layers));
  return w.take();
}
}  // namespace

ImportedModel import_hf_bert(const HfFolderInfo& f) {
  ImportedModel m;
  m.config = bert_config(f);
  set_special_ids(f.dir, m.config);
  m.config.validate();
  m.tensors = convert_weights(f, m.config, m.notes);
  m.provenance = hf_provenance(f, "huggingface-bert");
  m.notes.push_back(cat("bos_id ", m.config.bos_id, " and eos_id ", m.config.eos_id,
                        ": the tokenizer's [CLS] and [SEP], which embedding wraps each text in; token types all 0"));
  if (!m.config.mlm_head)
    m.notes.push_back("no masked-LM head (BertModel): the model is for embedding; its logits (the hidden states "
                      "times the word embeddings) are not a Hugging Face output");
  return m;
}

}  // namespace tfm
