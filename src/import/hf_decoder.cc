// The special ids and weight reshaping that the Hugging Face causal language models' importers share.
#include "import/hf_decoder.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// eos_token_id of `config` (file `where`): its ids in order (one id or a list), none when absent or
// null; each an integer.
std::vector<int32_t> end_ids(const json& config, const fs::path& where) {
  const auto it = config.find("eos_token_id");
  if (it == config.end() || it->is_null()) return {};
  const json list = it->is_array() ? *it : json::array({*it});
  std::vector<int32_t> ids;
  for (const json& v : list) {
    TFM_CHECK(!v.is_null(), "import hf: ", where.string(), ": 'eos_token_id' lists null, ", json_quote(*it));
    json one = json::object();
    one["eos_token_id"] = v;
    ids.push_back(hf_field<int32_t>(one, "eos_token_id", -1, where));
  }
  return ids;
}

// The ids generation ends at: generation_config.json's eos_token_id when it has one (generate()
// reads it), else config.json's; at least one. The first is eos_id, the others stop_ids (each once).
void set_end_ids(const HfFolderInfo& f, ModelConfig& c, std::vector<std::string>& notes) {
  std::vector<int32_t> ends = end_ids(f.config, f.config_path);
  // config.json's own, even where generation_config.json's is the one used: a wrong one is a
  // broken config.json.
  for (int32_t id : ends)
    TFM_CHECK(id < c.vocab_size, "import hf: ", f.config_path.string(), ": eos_token_id ", id,
              " is outside the vocabulary (vocab_size ", c.vocab_size, ")");
  fs::path from = f.config_path;
  const fs::path generation = f.dir / "generation_config.json";
  if (fs::exists(generation)) {
    std::vector<int32_t> listed = end_ids(read_hf_json(generation), generation);
    if (!listed.empty()) ends = std::move(listed), from = generation;
  }
  TFM_CHECK(!ends.empty(), "import hf: ", f.config_path.string(),
            ": eos_token_id is missing (nor in generation_config.json); generation needs an end-of-sequence id");
  for (int32_t id : ends)
    TFM_CHECK(id >= 0 && id < c.vocab_size, "import hf: ", from.string(), ": eos_token_id ", id,
              " is outside the vocabulary (vocab_size ", c.vocab_size, "); generation needs an end-of-sequence id");
  c.eos_id = ends[0];
  c.stop_ids.clear();
  std::set<int32_t> seen = {c.eos_id};
  for (int32_t id : ends)
    if (seen.insert(id).second) c.stop_ids.push_back(id);
  if (ends.size() > 1)
    notes.push_back(cat(from.filename().string(), "'s eos_token_id lists ", json(ends).dump(), ": eos_id ", c.eos_id,
                        ", stop_ids ", json(c.stop_ids).dump(), " (generation ends at any of them)"));
}
}  // namespace

void hf_decoder_special_ids(const HfFolderInfo& f, ModelConfig& c, std::vector<std::string>& notes) {
  set_end_ids(f, c, notes);
  c.bos_id = hf_field<int32_t>(f.config, "bos_token_id", -1, f.config_path);
  TFM_CHECK(c.bos_id >= -1 && c.bos_id < c.vocab_size, "import hf: ", f.config_path.string(), ": bos_token_id ",
            c.bos_id, " is outside the vocabulary (vocab_size ", c.vocab_size, ")");
  const bool ends = c.bos_id == c.eos_id ||
                    std::find(c.stop_ids.begin(), c.stop_ids.end(), c.bos_id) != c.stop_ids.end();
  if (c.bos_id >= 0 && ends) {
    notes.push_back(cat("bos_token_id is an end-of-sequence id, ", c.bos_id, ": no BOS is put before prompts"));
    c.bos_id = -1;
  }
  c.pad_id = -1;
  int32_t unk = 0;
  while (unk == c.bos_id || unk == c.eos_id ||
         std::find(c.stop_ids.begin(), c.stop_ids.end(), unk) != c.stop_ids.end())
    ++unk;
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
