// The vocabulary of an imported Hugging Face model, from its tokenizer files.
#include "import/hf_common.h"

namespace tfm {

Vocab hf_vocabulary(const HfFolderInfo& folder, ModelConfig&) {
  throw Error(cat("import hf: ", folder.dir.string(), ": reading this architecture's tokenizer is not implemented"));
}

}  // namespace tfm
