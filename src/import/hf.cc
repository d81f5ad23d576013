// `transformer import hf DIR`: a folder written by transformers' save_pretrained, dispatched on
// config.json's "architectures" (or its "model_type") to the importer of that architecture.
#include <algorithm>
#include <string>
#include <vector>

#include "import/hf_common.h"
#include "import/hf_m2m100.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

using Importer = ImportedModel (*)(const HfFolderInfo&);

struct Architecture {
  const char* model_type;            // config.json's "model_type"
  std::vector<std::string> classes;  // its "architectures" entries this importer reads
  Importer import;
  bool own_vocabulary;  // the importer reads the vocabulary itself, else hf_vocabulary does
};

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> table = {
      {"marian", {"MarianMTModel"}, import_hf_marian, true},
      {"gpt2", {"GPT2LMHeadModel", "GPT2Model"}, import_hf_gpt2, false},
      {"llama", {"LlamaForCausalLM"}, import_hf_llama, false},
      {"qwen2", {"Qwen2ForCausalLM"}, import_hf_llama, false},
      {"mistral", {"MistralForCausalLM"}, import_hf_llama, false},
      {"bert", {"BertModel", "BertForMaskedLM"}, import_hf_bert, false},
      {"m2m_100", {"M2M100ForConditionalGeneration"}, import_hf_m2m100, true},
  };
  return table;
}

std::string supported_list() {
  std::string list;
  for (const Architecture& a : architectures())
    for (const std::string& c : a.classes) list += cat(list.empty() ? "" : ", ", c);
  return list;
}

// config.json, a JSON object naming an architecture this program imports.
HfFolderInfo read_folder(const std::string& dir_name, const Architecture*& chosen) {
  HfFolderInfo f;
  f.dir = dir_name;
  TFM_CHECK(fs::is_directory(f.dir), "import hf: '", dir_name, "' is not a folder");
  if (fs::exists(f.dir / "modules.json")) {  // sentence-transformers: the model is its Transformer module
    f.sentence_transformers = f.dir;
    f.dir = sentence_transformers_model_dir(f.dir);
  }
  f.config_path = f.dir / "config.json";
  f.config = read_hf_json(f.config_path);
  TFM_CHECK(f.config.is_object(), "import hf: ", f.config_path.string(), " is not a JSON object");
  f.model_type = hf_field<std::string>(f.config, "model_type", "", f.config_path);
  hf_refuse_unless(f.config, "quantization_config", nullptr, f.config_path,
                   "quantized weights (GPTQ, AWQ, bitsandbytes, FP8, ...) are not read; import the model's float32, "
                   "float16 or bfloat16 checkpoint");
  if (f.config.contains("architectures") && f.config["architectures"].is_array() && !f.config["architectures"].empty()) {
    const json& first = f.config["architectures"][0];
    TFM_CHECK(first.is_string(), "import hf: ", f.config_path.string(), ": 'architectures' must list class names, got ",
              json_quote(f.config["architectures"]));
    f.architecture = first.get<std::string>();
  }
  for (const Architecture& a : architectures()) {
    if (f.model_type != a.model_type) continue;
    const bool known = f.architecture.empty() ||
                       std::find(a.classes.begin(), a.classes.end(), f.architecture) != a.classes.end();
    TFM_CHECK(known, "import hf: ", f.config_path.string(), ": architecture '", f.architecture,
              "' is not supported (", supported_list(), " are)");
    chosen = &a;
    return f;
  }
  throw Error(cat("import hf: ", f.config_path.string(), ": model_type '", f.model_type, "' is not supported (",
                  supported_list(), " are)"));
}
}  // namespace

namespace {
// The architecture's importer; the checks of the model configuration it fills (ModelConfig's, whose
// messages begin "model: ") are said to be about config.json.
ImportedModel import_model(const Architecture& a, const HfFolderInfo& folder) {
  try {
    return a.import(folder);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (!what.starts_with("model: ")) throw;
    throw Error(cat("import hf: ", folder.config_path.string(), " describes a model this program refuses: ",
                    what.substr(7)));
  }
}

// The model and, with `vocabulary`, its vocabulary (the tokenizer's special ids then set the
// model's bos and eos ids).
ImportedModel import_folder(const std::string& dir, bool vocabulary) {
  const Architecture* chosen = nullptr;
  const HfFolderInfo folder = read_folder(dir, chosen);
  ImportedModel m = import_model(*chosen, folder);
  if (!folder.sentence_transformers.empty()) apply_sentence_transformers(folder.sentence_transformers, m);
  if (vocabulary && !chosen->own_vocabulary) m.vocab = hf_vocabulary(folder, m.config);
  return m;
}
}  // namespace

ImportedModel import_hf(const std::string& dir) { return import_folder(dir, true); }

ImportedModel import_hf_without_vocabulary(const std::string& dir) { return import_folder(dir, false); }

}  // namespace tfm
