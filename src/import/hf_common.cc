// What the Hugging Face importers share: JSON files, config fields, and the checkpoint's tensors
// (one safetensors file or a sharded index) read as float32 and accounted for.
#include "import/hf_common.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "io/atomic_file.h"

namespace tfm {

namespace fs = std::filesystem;
using nlohmann::json;

json read_hf_json(const fs::path& path) {
  TFM_CHECK(fs::exists(path), "import hf: '", path.string(), "' does not exist");
  return parse_json(read_file(path.string()), cat("import hf: '", path.string(), "'"));
}

void hf_refuse_unless(const json& config, const char* key, const json& expected, const fs::path& where,
                      const std::string& why) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null() || *it == expected) return;
  throw Error(cat("import hf: ", where.string(), ": '", key, "' ", json_quote(*it), " is not supported: ", why));
}

namespace {
// model.safetensors.index.json's weight_map: tensor → shard file name (a plain name in the folder).
std::map<std::string, std::string> read_weight_map(const fs::path& index) {
  const json j = read_hf_json(index);
  TFM_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), "import hf: ", index.string(),
            " has no \"weight_map\" object");
  std::map<std::string, std::string> map;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    TFM_CHECK(file.is_string(), "import hf: ", index.string(), ": the shard of '", tensor, "' is ", json_quote(file),
              ", not a file name");
    const std::string name = file.get<std::string>();
    TFM_CHECK(!name.empty() && fs::path(name).filename().string() == name && name != "." && name != "..",
              "import hf: ", index.string(), ": the shard of '", tensor, "' is '", name,
              "', not a file name in the folder");
    map[tensor] = name;
  }
  TFM_CHECK(!map.empty(), "import hf: ", index.string(), " lists no tensors");
  return map;
}
}  // namespace

HfCheckpoint HfCheckpoint::open(const fs::path& dir) {
  HfCheckpoint c;
  const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  if (fs::exists(single)) {
    c.source_ = single.string();
    c.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::read(single.string())));
    for (const std::string& name : c.files_[0]->names()) c.where_[name] = 0;
    return c;
  }
  if (!fs::exists(index)) {
    TFM_CHECK(!fs::exists(dir / "pytorch_model.bin"), "import hf: '", dir.string(),
              "' has its weights only as pytorch_model.bin (a Python pickle, which this program does not read); "
              "convert it once with transformers: AutoModel.from_pretrained(DIR).save_pretrained(DIR) writes "
              "model.safetensors");
    throw Error(cat("import hf: '", single.string(), "' does not exist (nor a sharded model.safetensors.index.json)"));
  }
  c.source_ = index.string();
  std::map<std::string, size_t> shard_index;
  for (const auto& [tensor, shard] : read_weight_map(index)) {
    auto [it, fresh] = shard_index.emplace(shard, c.files_.size());
    if (fresh) {
      TFM_CHECK(fs::is_regular_file(dir / shard), "import hf: ", index.string(), " puts '", tensor, "' in ", shard,
                ", which is not a file in ", dir.string());
      c.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::read((dir / shard).string())));
    }
    TFM_CHECK(c.files_[it->second]->has(tensor), "import hf: ", index.string(), " puts '", tensor, "' in ", shard,
              ", which has no such tensor");
    c.where_[tensor] = it->second;
  }
  for (const auto& file : c.files_)
    for (const std::string& name : file->names())
      TFM_CHECK(c.where_.count(name), "import hf: ", file->source(), " holds '", name, "', which ", index.string(),
                " does not list");
  return c;
}

std::vector<std::string> HfCheckpoint::names() const {
  std::vector<std::string> n;
  for (const auto& [name, i] : where_) n.push_back(name);
  return n;
}

const std::string& HfCheckpoint::file_of(const std::string& name) const {
  const auto it = where_.find(name);
  TFM_CHECK(it != where_.end(), "import hf: ", source_, " has no tensor '", name, "'");
  return files_[it->second]->source();
}

DType HfCheckpoint::dtype(const std::string& name) const {
  file_of(name);
  return files_[where_.at(name)]->dtype(name);
}

Shape HfCheckpoint::shape(const std::string& name) const {
  file_of(name);
  return files_[where_.at(name)]->shape(name);
}

Tensor HfCheckpoint::tensor(const std::string& name) const {
  file_of(name);
  return files_[where_.at(name)]->tensor(name);
}

Tensor HfWeights::get(const std::string& name) {
  TFM_CHECK(file_.has(name), "import hf: ", file_.source(), " has no tensor '", name, "'");
  const DType dtype = file_.dtype(name);
  TFM_CHECK(dtype == DType::F32 || dtype == DType::F64, "import hf: ", file_.file_of(name), ": tensor '", name,
            "' is stored as ", tfm::name(dtype), ", but a weight must be floating point (F32, F64, F16 or BF16)");
  used_.insert(name);
  Tensor t = file_.tensor(name);
  return t.dtype() == DType::F32 ? t : t.to(DType::F32);
}

const Tensor& HfWeights::converted(const std::string& ours) const {
  for (const NamedTensor& t : tensors_)
    if (t.name == ours) return t.tensor;
  throw Error(cat("import hf: no tensor was converted into '", ours, "'"));
}

Tensor HfWeights::first_of(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (file_.has(n)) return get(n);
  std::string list;
  for (const char* n : names) list += cat(list.empty() ? "" : ", ", "'", n, "'");
  throw Error(cat("import hf: ", file_.source(), " has none of ", list));
}

void HfWeights::check_copy(const std::string& name, const std::string& ours, const char* tied_by) {
  const Tensor& tied = converted(ours);
  const Tensor copy = get(name);
  TFM_CHECK(copy.shape() == tied.shape() && std::memcmp(copy.raw(), tied.raw(), tied.bytes()) == 0, "import hf: ",
            file_.file_of(name), ": tensor '", name, "' differs from the embedding it is tied to (", tied_by,
            " true in config.json)");
}

std::vector<std::string> HfWeights::unread() const {
  std::vector<std::string> left;
  for (const std::string& name : file_.names())
    if (!used(name)) left.push_back(name);
  return left;
}

void HfWeights::refuse_unread(const std::string& description) const {
  const std::vector<std::string> left = unread();
  if (left.empty()) return;
  throw Error(cat("import hf: ", file_.file_of(left.front()), ": tensor '", left.front(), "'",
                  left.size() > 1 ? cat(" (and ", left.size() - 1, " more)") : std::string(),
                  " is not part of the model config.json describes (", description,
                  "): are config.json and the weights of one model?"));
}

namespace {
// transformers' name of a block in "model.encoder.layers.0" (".self_attn", ".final_layer_norm", ...).
const char* seq2seq_block(LayerBlock block) {
  switch (block) {
    case LayerBlock::kSelfAttention: return ".self_attn";
    case LayerBlock::kSelfAttentionNorm: return ".self_attn_layer_norm";
    case LayerBlock::kCrossAttention: return ".encoder_attn";
    case LayerBlock::kCrossAttentionNorm: return ".encoder_attn_layer_norm";
    case LayerBlock::kFfn: return "";
    case LayerBlock::kFfnNorm: return ".final_layer_norm";
  }
  return "?";
}
}  // namespace

std::string hf_seq2seq_layer_param(const LayerParam& p) {
  const std::string theirs = cat("model.", p.decoder ? "decoder" : "encoder", ".layers.", p.layer, seq2seq_block(p.block));
  const char* w = p.weight ? "weight" : "bias";
  if (p.block == LayerBlock::kFfn) return cat(theirs, ".", p.part, ".", w);
  if (p.part.empty()) return cat(theirs, ".", w);
  return cat(theirs, ".", p.part, "_proj.", w);
}

void hf_read_seq2seq_sizes(const json& config, const fs::path& path, ModelConfig& c) {
  c.d_model = hf_required<int64_t>(config, "d_model", path);
  c.encoder_layers = hf_required<int64_t>(config, "encoder_layers", path);
  c.decoder_layers = hf_required<int64_t>(config, "decoder_layers", path);
  c.heads = hf_required<int64_t>(config, "encoder_attention_heads", path);
  c.d_ff = hf_required<int64_t>(config, "encoder_ffn_dim", path);
  c.vocab_size = hf_required<int64_t>(config, "vocab_size", path);
  for (const auto& [key, value] : {std::pair{"decoder_attention_heads", c.heads}, {"decoder_ffn_dim", c.d_ff}}) {
    const int64_t v = hf_field<int64_t>(config, key, value, path);
    TFM_CHECK(v == value, "import hf: ", path.string(), ": '", key, "' is ", v, " but the encoder's is ", value,
              "; encoder and decoder of different shapes are not supported");
  }
}

json hf_provenance(const HfFolderInfo& f, const std::string& format) {
  return {{"format", format},
          {"path", fs::absolute(f.dir).lexically_normal().string()},
          {"architecture", f.architecture},
          {"transformers_version", hf_field<std::string>(f.config, "transformers_version", "", f.config_path)},
          {"name_or_path", hf_field<std::string>(f.config, "_name_or_path", "", f.config_path)}};
}

}  // namespace tfm
