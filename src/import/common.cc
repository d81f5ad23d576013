// What both importers share: converting values, naming the layers' parameters, and writing the
// converted model and its vocabulary.
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <system_error>

#include "import/import.h"
#include "import/tensors.h"
#include "model/checkpoint.h"

namespace tfm {

Tensor import_matrix(const std::vector<float>& values, const std::vector<int64_t>& shape, bool transpose,
                     const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  TFM_CHECK(static_cast<int64_t>(values.size()) == n, what, ": ", values.size(), " values for its shape");
  for (size_t i = 0; i < values.size(); ++i)
    TFM_CHECK(std::isfinite(values[i]), what, " holds ", values[i], " at index ", i);
  if (!transpose) return Tensor::from<float>(Shape(shape), values);
  TFM_CHECK(shape.size() == 2, what, ": only a matrix can be transposed");
  const int64_t rows = shape[0], cols = shape[1];
  Tensor t = Tensor::empty({cols, rows});
  float* out = t.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = values[static_cast<size_t>(r * cols + c)];
  return t;
}

namespace {
// This project's name of a block in a layer.
const char* block_name(LayerBlock block) {
  switch (block) {
    case LayerBlock::kSelfAttention: return "self_attn";
    case LayerBlock::kSelfAttentionNorm: return "self_attn_norm";
    case LayerBlock::kCrossAttention: return "cross_attn";
    case LayerBlock::kCrossAttentionNorm: return "cross_attn_norm";
    case LayerBlock::kFfn: return "ffn";
    case LayerBlock::kFfnNorm: return "ffn_norm";
  }
  return "?";
}

// The parts of a block: an attention's projections, the feed-forward's two layers; a norm has none.
std::vector<std::string> block_parts(LayerBlock block) {
  switch (block) {
    case LayerBlock::kSelfAttention:
    case LayerBlock::kCrossAttention: return {"q", "k", "v", "out"};
    case LayerBlock::kFfn: return {"fc1", "fc2"};
    default: return {""};
  }
}

// This project's name of a parameter of `layer` ("decoder.layers.2").
std::string param_name(const std::string& layer, const LayerParam& p) {
  const char* w = p.weight ? "weight" : "bias";
  if (p.block == LayerBlock::kFfn) return cat(layer, ".ffn.", p.part, ".", w);
  if (p.part.empty()) return cat(layer, ".", block_name(p.block), ".", w);
  return cat(layer, ".", block_name(p.block), ".", p.part, "_proj.", w);
}
}  // namespace

void for_each_layer_param(const ModelConfig& config, const std::function<void(const LayerParam&)>& visit) {
  using B = LayerBlock;
  for (const bool decoder : {false, true}) {
    const std::vector<B> blocks =
        decoder ? std::vector<B>{B::kSelfAttention, B::kSelfAttentionNorm, B::kCrossAttention, B::kCrossAttentionNorm,
                                 B::kFfn, B::kFfnNorm}
                : std::vector<B>{B::kSelfAttention, B::kSelfAttentionNorm, B::kFfn, B::kFfnNorm};
    const int64_t layers = decoder ? config.decoder_layers : config.encoder_layers;
    for (int64_t i = 0; i < layers; ++i) {
      const std::string layer = cat(decoder ? "decoder" : "encoder", ".layers.", i);
      for (const B block : blocks)
        for (const std::string& part : block_parts(block))
          for (const bool weight : {true, false}) {
            LayerParam p{"", decoder, i, block, part, weight};
            p.name = param_name(layer, p);
            visit(p);
          }
    }
  }
}

namespace {
namespace fs = std::filesystem;

// Every parameter of the model from the converted tensor of its name, each converted once, with
// the parameter's shape, and nothing converted that is not a parameter.
void fill_parameters(ParamStore& params, const std::vector<NamedTensor>& tensors) {
  std::map<std::string, const Tensor*> by_name;
  for (const NamedTensor& t : tensors) {
    TFM_CHECK(by_name.emplace(t.name, &t.tensor).second, "import: the tensor '", t.name, "' was converted twice");
    TFM_CHECK(params.find(t.name) >= 0, "import: '", t.name, "' is not a parameter of the model its configuration describes");
  }
  for (int id = 0; id < params.size(); ++id) {
    const std::string& name = params.name(id);
    const auto it = by_name.find(name);
    TFM_CHECK(it != by_name.end(), "import: nothing was converted into the parameter '", name, "'");
    TFM_CHECK(it->second->shape() == params.shape(id), "import: '", name, "' has shape ", it->second->shape(),
              " but the configuration needs ", params.shape(id));
    params.value(id).copy_from(*it->second);
  }
}

// The number of values the configuration implies against the converted tensors, before the model
// is allocated: a configuration of other sizes than its weights (a vocab_size or d_ff of another
// model, or an absurd one) is refused here rather than after allocating what it describes.
void check_size(const ImportedModel& m) {
  const ModelConfig& c = m.config;
  c.validate();
  int64_t converted = 0;
  std::string embedding;
  for (const NamedTensor& t : m.tensors) {
    converted += t.tensor.numel();
    if (t.name.ends_with("embed.weight") && embedding.empty())
      embedding = cat("; '", t.name, "' is ", t.tensor.shape());
  }
  const int64_t needed = parameter_count(c);
  TFM_CHECK(converted == needed, "import: the configuration (vocab_size ", c.vocab_size, ", d_model ", c.d_model,
            ", d_ff ", c.d_ff, ", heads ", c.heads, ", kv_heads ", c.kv_heads, ", layers ", c.encoder_layers, "+",
            c.decoder_layers, ") needs ", needed, " parameter values, but the converted weights hold ", converted,
            embedding, ": are the configuration and the weights of one model?");
}

// The outermost folder of `dir` that does not exist yet (what create_directories makes), or empty.
fs::path first_missing_folder(const std::string& dir) {
  fs::path made;
  for (fs::path p = fs::absolute(dir); !p.empty() && !fs::exists(p); p = p.parent_path()) {
    made = p;
    if (p == p.parent_path()) break;
  }
  return made;
}

// The entries of `dir` (none when it does not exist).
std::set<fs::path> entries_of(const std::string& dir) {
  std::set<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.insert(e.path());
  return out;
}

// After a failed write: the folders the import made go, or in a folder that was there before, the
// files it did not have then (a vocabulary written before the model failed to be; the import
// makes no folders inside it).
void undo_write(const std::string& dir, const fs::path& made, const std::set<fs::path>& before) {
  std::error_code ec;
  if (!made.empty()) {
    fs::remove_all(made, ec);
    return;
  }
  for (const fs::path& p : entries_of(dir))
    if (!before.count(p) && fs::is_regular_file(p, ec)) fs::remove(p, ec);
}
}  // namespace

void refuse_existing_import(const std::string& dir) {
  for (const char* file : {"model.safetensors", kPieceVocabFile}) {
    const std::filesystem::path path = std::filesystem::path(dir) / file;
    TFM_CHECK(!std::filesystem::exists(path), "import: the output folder '", dir, "' already holds a model ('",
              path.string(), "'); import into a new or empty folder, or remove that one first");
  }
}

std::string write_imported(const ImportedModel& imported, const std::string& dir) {
  // Everything is checked before the first file is written: the configuration, and every parameter
  // present once with its shape.
  check_size(imported);
  Transformer model(imported.config);
  fill_parameters(model.params(), imported.tensors);
  TFM_CHECK(imported.vocab.size() == imported.config.vocab_size, "import: the vocabulary has ", imported.vocab.size(),
            " pieces but the embedding has ", imported.config.vocab_size, " rows");
  // The folders this import makes go again when a write fails (a full disk between the vocabulary
  // and the model): no folder with a vocabulary but no model is left behind.
  const fs::path made = first_missing_folder(dir);
  const std::set<fs::path> before = entries_of(dir);
  fs::create_directories(dir);
  const std::string path = (fs::path(dir) / "model.safetensors").string();
  try {
    imported.vocab.save_pieces(dir);
    save_model(model, path,
               {{kVocabFingerprintKey, imported.vocab.fingerprint()}, {kImportedFromKey, imported.provenance.dump()}});
  } catch (...) {
    undo_write(dir, made, before);
    throw;
  }
  return path;
}

}  // namespace tfm
