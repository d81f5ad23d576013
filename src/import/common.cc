// What both importers share: writing the converted model and its vocabulary.
#include <filesystem>
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

std::string write_imported(const ImportedModel& imported, const std::string& dir) {
  namespace fs = std::filesystem;
  // Everything is checked before the first file is written: the configuration, and every parameter
  // present once with its shape.
  Transformer model(imported.config);
  ParamStore& params = model.params();
  std::map<std::string, const Tensor*> by_name;
  for (const NamedTensor& t : imported.tensors) {
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
  TFM_CHECK(imported.vocab.size() == imported.config.vocab_size, "import: the vocabulary has ", imported.vocab.size(),
            " pieces but the embedding has ", imported.config.vocab_size, " rows");
  // The folders this import makes go again when a write fails (a full disk between the vocabulary
  // and the model): no folder with a vocabulary but no model is left behind.
  fs::path made;  // the outermost folder create_directories makes, if any
  for (fs::path p = fs::absolute(dir); !p.empty() && !fs::exists(p); p = p.parent_path()) {
    made = p;
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir);
  const std::string path = (fs::path(dir) / "model.safetensors").string();
  try {
    imported.vocab.save_pieces(dir);
    save_model(model, path,
               {{kVocabFingerprintKey, imported.vocab.fingerprint()}, {kImportedFromKey, imported.provenance.dump()}});
  } catch (...) {
    std::error_code ec;
    if (!made.empty()) fs::remove_all(made, ec);
    throw;
  }
  return path;
}

}  // namespace tfm
