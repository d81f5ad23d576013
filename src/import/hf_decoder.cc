// The special ids and weight reshaping that the Hugging Face causal language models' importers share.
#include "import/hf_decoder.h"

#include <algorithm>
#include <filesystem>

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// eos_token_id of `config` (file `where`): an id, a list of one id, or −1 when absent or null; a
// longer list is refused, naming it.
int32_t end_id(const json& config, const fs::path& where) {
  const auto it = config.find("eos_token_id");
  if (it == config.end() || it->is_null()) return -1;
  if (it->is_array()) {
    TFM_CHECK(it->size() == 1, "import hf: ", where.string(), ": 'eos_token_id' lists several ids, ", json_quote(*it),
              "; generation stops at one end-of-sequence id: give one");
    json one = json::object();
    one["eos_token_id"] = (*it)[0];
    return hf_field<int32_t>(one, "eos_token_id", -1, where);
  }
  return hf_field<int32_t>(config, "eos_token_id", -1, where);
}
}  // namespace

void hf_decoder_special_ids(const HfFolderInfo& f, ModelConfig& c, std::vector<std::string>& notes) {
  int32_t eos = end_id(f.config, f.config_path);
  // config.json's own, even where generation_config.json's is the one used: a wrong one is a
  // broken config.json.
  TFM_CHECK(eos < c.vocab_size, "import hf: ", f.config_path.string(), ": eos_token_id ", eos,
            " is outside the vocabulary (vocab_size ", c.vocab_size, ")");
  const fs::path generation = f.dir / "generation_config.json";
  if (fs::exists(generation)) {
    const int32_t generation_eos = end_id(read_hf_json(generation), generation);
    if (generation_eos >= 0) eos = generation_eos;
  }
  TFM_CHECK(eos >= 0 && eos < c.vocab_size, "import hf: ", f.config_path.string(), ": eos_token_id ", eos,
            eos < 0 ? " is missing" : " is outside the vocabulary", " (vocab_size ", c.vocab_size,
            "); generation needs an end-of-sequence id");
  c.eos_id = eos;
  c.bos_id = hf_field<int32_t>(f.config, "bos_token_id", -1, f.config_path);
  TFM_CHECK(c.bos_id >= -1 && c.bos_id < c.vocab_size, "import hf: ", f.config_path.string(), ": bos_token_id ",
            c.bos_id, " is outside the vocabulary (vocab_size ", c.vocab_size, ")");
  if (c.bos_id == c.eos_id) {
    c.bos_id = -1;
    notes.push_back(cat("bos_token_id is the end-of-sequence id ", eos, ": no BOS is put before prompts"));
  }
  c.pad_id = -1;
  int32_t unk = 0;
  while (unk == c.bos_id || unk == c.eos_id) ++unk;
  c.unk_id = unk;
}

Tensor hf_transposed(HfWeights& w, const std::string& name) {
  const Tensor t = w.get(name);
  TFM_CHECK(t.rank() == 2 && t.dtype() == DType::F32, "import hf: ", w.checkpoint().file_of(name), ": tensor '", name,
            "' has shape ", t.shape(), ", not a matrix");
  const int64_t rows = t.size(0), cols = t.size(1);
  Tensor out = Tensor::empty({cols, rows});
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) dst[k * rows + r] = src[r * cols + k];
  return out;
}

Tensor hf_rows(const Tensor& t, int64_t begin, int64_t count) { return t.rows(begin, count).clone(); }

Tensor hf_stacked(const Tensor& a, const Tensor& b, const std::string& what) {
  bool fits = a.rank() == b.rank() && a.rank() >= 1 && a.dtype() == b.dtype();
  for (int i = 1; fits && i < a.rank(); ++i) fits = a.size(i) == b.size(i);
  TFM_CHECK(fits, "import hf: ", what, ": shapes ", a.shape(), " and ", b.shape(),
            " differ in width: are they of one model?");
  std::vector<int64_t> dims;
  for (int i = 0; i < a.rank(); ++i) dims.push_back(i == 0 ? a.size(0) + b.size(0) : a.size(i));
  Tensor out = Tensor::empty(Shape(dims), a.dtype());
  out.rows(0, a.size(0)).copy_from(a);
  out.rows(a.size(0), b.size(0)).copy_from(b);
  return out;
}

}  // namespace tfm
