// sentence-transformers folders (SentenceTransformer.save): modules.json's Transformer module is the
// model; its Pooling module and an optional Normalize become the model's default pooling and
// normalization of `embed`. Any other module (Dense, ...) is refused, naming it.
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_text.h"
#include "import/hf_common.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

struct Module {
  std::string kind;  // the last part of its type: "Transformer", "Pooling", "Normalize", "Dense", ...
  std::string type;  // as modules.json gives it ("sentence_transformers.models.Pooling")
  fs::path dir;      // its folder
};

// modules.json's entries in order.
std::vector<Module> read_modules(const fs::path& dir) {
  const fs::path path = dir / "modules.json";
  const json j = read_hf_json(path);
  TFM_CHECK(j.is_array() && !j.empty(), "import hf: ", path.string(), " must be a non-empty array of modules, got ",
            json_quote(j));
  std::vector<Module> modules;
  for (const json& entry : j) {
    TFM_CHECK(entry.is_object(), "import hf: ", path.string(), ": a module must be an object, got ", json_quote(entry));
    Module m;
    m.type = hf_required<std::string>(entry, "type", path);
    m.kind = m.type.substr(m.type.rfind('.') + 1);
    const std::string sub = hf_field<std::string>(entry, "path", "", path);
    TFM_CHECK(!fs::path(sub).is_absolute() && sub.find("..") == std::string::npos, "import hf: ", path.string(),
              ": the path of module '", m.type, "' is '", sub, "', not a folder inside ", dir.string());
    m.dir = sub.empty() ? dir : dir / sub;
    modules.push_back(m);
  }
  return modules;
}

// The modules, checked: Transformer, Pooling, then an optional Normalize; anything else refused.
std::vector<Module> checked_modules(const fs::path& dir) {
  const std::vector<Module> modules = read_modules(dir);
  const char* const expected[] = {"Transformer", "Pooling", "Normalize"};
  for (size_t i = 0; i < modules.size(); ++i)
    TFM_CHECK(i < 3 && modules[i].kind == expected[i], "import hf: ", (dir / "modules.json").string(), ": module ", i,
              " of type '", modules[i].type, "' is not supported (a Transformer, a Pooling and optionally a "
              "Normalize module are, in that order)");
  TFM_CHECK(modules.size() >= 2, "import hf: ", (dir / "modules.json").string(),
            " lists no Pooling module after the Transformer");
  return modules;
}

// 1_Pooling/config.json's mode: "pooling_mode" (a name, or a list of one), or the older
// pooling_mode_* flags (exactly one true). → this project's pooling name.
std::string pooling_mode(const json& j, const fs::path& path) {
  std::vector<std::string> modes;
  if (j.contains("pooling_mode")) {
    const json& p = j["pooling_mode"];
    for (const json& m : p.is_array() ? p : json::array({p})) {
      TFM_CHECK(m.is_string(), "import hf: ", path.string(), ": 'pooling_mode' must name modes, got ", json_quote(p));
      modes.push_back(m.get<std::string>());
    }
  } else {
    for (const auto& [key, mode] : {std::pair{"pooling_mode_cls_token", "cls"}, {"pooling_mode_mean_tokens", "mean"},
                                    {"pooling_mode_max_tokens", "max"}, {"pooling_mode_lasttoken", "lasttoken"},
                                    {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"},
                                    {"pooling_mode_weightedmean_tokens", "weightedmean"}})
      if (hf_field<bool>(j, key, false, path)) modes.push_back(mode);
  }
  TFM_CHECK(modes.size() == 1, "import hf: ", path.string(), ": ", modes.size(),
            " pooling modes are set; exactly one is supported (concatenated poolings are not)");
  const std::string& mode = modes[0];
  if (mode == "cls" || mode == "mean" || mode == "max") return mode;
  if (mode == "lasttoken") return "last";
  throw Error(cat("import hf: ", path.string(), ": pooling mode '", mode,
                  "' is not supported (cls, mean, max and lasttoken are)"));
}

// What the Transformer module's settings change: lowercasing before the tokenizer is refused, a
// default prompt too; the length at which sentence-transformers truncates is noted.
void check_transformer_module(const fs::path& root, const Module& t, ImportedModel& m) {
  const fs::path bert_config = t.dir / "sentence_bert_config.json";
  if (fs::exists(bert_config)) {
    const json j = read_hf_json(bert_config);
    hf_refuse_unless(j, "do_lower_case", false, bert_config,
                     "the tokenizer's own normalization is used; lowercasing before it is not supported");
    const int64_t max_length = hf_field<int64_t>(j, "max_seq_length", 0, bert_config);
    if (max_length > 0)
      m.notes.push_back(cat("sentence-transformers truncates inputs to max_seq_length ", max_length,
                            " tokens; embed refuses an input longer than --max-input-tokens or the model's positions"));
  }
  const fs::path st_config = root / "config_sentence_transformers.json";
  if (fs::exists(st_config))
    hf_refuse_unless(read_hf_json(st_config), "default_prompt_name", nullptr, st_config,
                     "a prompt prepended to every input is not supported");
}
}  // namespace

fs::path sentence_transformers_model_dir(const fs::path& dir) { return checked_modules(dir)[0].dir; }

void apply_sentence_transformers(const fs::path& dir, ImportedModel& m) {
  const std::vector<Module> modules = checked_modules(dir);
  check_transformer_module(dir, modules[0], m);
  const fs::path pooling_path = modules[1].dir / "config.json";
  const json pooling = read_hf_json(pooling_path);
  TFM_CHECK(pooling.is_object(), "import hf: ", pooling_path.string(), " is not a JSON object");
  for (const char* key : {"embedding_dimension", "word_embedding_dimension"}) {
    const int64_t dim = hf_field<int64_t>(pooling, key, m.config.d_model, pooling_path);
    TFM_CHECK(dim == m.config.d_model, "import hf: ", pooling_path.string(), ": '", key, "' is ", dim,
              " but the model's hidden size is ", m.config.d_model);
  }
  m.config.pooling = pooling_mode(pooling, pooling_path);
  m.config.normalize_embeddings = modules.size() == 3;
  m.provenance["sentence_transformers"] = fs::absolute(dir).lexically_normal().string();
  m.notes.push_back(cat("sentence-transformers: embed pools by ", m.config.pooling,
                        m.config.normalize_embeddings ? " and normalizes" : " without normalizing",
                        " unless told otherwise (--pooling, --normalize)"));
}

}  // namespace tfm
