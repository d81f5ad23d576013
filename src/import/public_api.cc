// The public import functions (include/transformer/import.h) over the importers.
#include <filesystem>

#include "core/error.h"
#include "import/import.h"
#include "transformer/import.h"

namespace transformer {

ImportResult import_huggingface(const std::string& folder, const std::string& output_dir) {
  std::error_code ec;
  TFM_CHECK(!std::filesystem::equivalent(folder, output_dir, ec), "import: the output folder '", output_dir,
            "' is the input folder; write the imported model to another one (its model.safetensors would replace "
            "the original's)");
  tfm::refuse_existing_import(output_dir);
  const tfm::ImportedModel m = tfm::import_hf(folder);
  ImportResult result;
  result.notes = m.notes;
  result.model_path = tfm::write_imported(m, output_dir);
  return result;
}

}  // namespace transformer
