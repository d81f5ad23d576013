#pragma once
// Importing published models (docs/import.md) from C++ and Python, as `transformer import` does:
// the model file and its vocabulary are written into a folder, after which Translator, Generator and
// Encoder load them as any model. Throws transformer::Error naming the file, field or tensor that
// cannot be imported; nothing is written then.
#include <string>
#include <vector>

namespace transformer {

struct ImportResult {
  std::string model_path;          // output_dir/model.safetensors
  std::vector<std::string> notes;  // choices the import made, for the user (what it read and skipped)
};

// A folder written by Hugging Face transformers' save_pretrained (or sentence-transformers' save):
// MarianMT, M2M-100/NLLB-200, GPT-2, Llama, Qwen2, Mistral, BERT. output_dir must not be the folder
// nor hold a model already (model.safetensors or vocabulary.json): an import never overwrites one.
ImportResult import_huggingface(const std::string& folder, const std::string& output_dir);

}  // namespace transformer
