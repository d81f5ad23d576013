#include "cli/model_io.h"

#include <filesystem>

#include "core/error.h"
#include "model/checkpoint.h"

namespace tfm::cli {

void add_model_options(CLI::App& cmd, ModelPaths& paths) {
  cmd.add_option("-m,--model", paths.model, "model file (.safetensors)")->required();
  cmd.add_option("--vocab", paths.vocab, "SentencePiece model (default: vocab.model beside the model)");
}

LoadedModel load_model_and_vocab(const ModelPaths& paths, bool need_vocab) {
  LoadedModel lm;
  lm.model = load_model(paths.model);
  if (need_vocab) {
    const std::string vocab = paths.vocab.empty()
                                  ? (std::filesystem::path(paths.model).parent_path() / "vocab.model").string()
                                  : paths.vocab;
    TFM_CHECK(std::filesystem::exists(vocab), "no vocabulary: '", vocab, "' does not exist (give --vocab)");
    lm.vocab = Vocab::load(vocab);
    TFM_CHECK(lm.vocab.size() == lm.model->config().vocab_size, "the vocabulary '", vocab, "' has ", lm.vocab.size(),
              " pieces but the model has ", lm.model->config().vocab_size);
  }
  return lm;
}

}  // namespace tfm::cli
