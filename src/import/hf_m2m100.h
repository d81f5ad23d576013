#pragma once
// Hugging Face M2M100ForConditionalGeneration folders (M2M-100 and NLLB-200 translators): the model
// (hf_m2m100.cc) and its vocabulary with the language codes (hf_m2m100_vocab.cc).
#include <string>
#include <vector>

#include "import/hf_common.h"

namespace tfm {

ImportedModel import_hf_m2m100(const HfFolderInfo& folder);

// The folder's tokenizer (M2M100Tokenizer: vocab.json; NllbTokenizer: tokenizer.json; each with
// sentencepiece.bpe.model) as a piece vocabulary of config.vocab_size ids with its language codes;
// sets config.unk_id and checks the padding and end-of-sentence ids against config.json's. Adds to
// `notes` what the user should know (rows of the embedding no token names).
Vocab m2m100_vocabulary(const HfFolderInfo& folder, ModelConfig& config, std::vector<std::string>& notes);

}  // namespace tfm
