// transformer import marian MODEL.npz --vocab VOCAB.yml --source-spm S --target-spm T -o DIR
// transformer import hf HF_DIR -o DIR
// Published models (OPUS-MT in Marian's format, Hugging Face MarianMT folders) into this project's
// format: DIR/model.safetensors and its vocabulary (docs/import.md).
#include <filesystem>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "core/error.h"
#include "import/import.h"
#include "transformer/import.h"

namespace tfm::cli {

namespace {
namespace fs = std::filesystem;

int finish(const ImportedModel& m, const std::string& output) {
  for (const std::string& note : m.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  const std::string path = write_imported(m, output);
  std::printf("%s\n", path.c_str());
  return 0;
}

Action add_import(CLI::App& app) {
  struct Options {
    MarianImport marian;
    std::string hf_dir, output;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("import", "import a published model (OPUS-MT / Marian, Hugging Face MarianMT)");
  cmd->require_subcommand(1);
  CLI::App* marian = cmd->add_subcommand("marian", "a Marian model: model.npz, its vocabulary .yml and SentencePiece models");
  marian->add_option("model", o->marian.npz, "the Marian model (.npz)")->required();
  marian->add_option("--vocab", o->marian.vocab, "the vocabulary (.yml), shared by source and target")->required();
  marian->add_option("--target-vocab", o->marian.target_vocab, "the target side's vocabulary (.yml), if separate");
  marian->add_option("--source-spm", o->marian.source_spm, "the source SentencePiece model (source.spm)")->required();
  marian->add_option("--target-spm", o->marian.target_spm, "the target SentencePiece model (target.spm)")->required();
  marian->add_option("--position-frequencies", o->marian.position_frequencies,
                     "the sinusoids' rates: marian (as Marian trained the model) or paper (as Hugging Face's and "
                     "CTranslate2's converters compute them)")
      ->capture_default_str();
  marian->add_option("-o,--output", o->output, "the folder to write model.safetensors, vocabulary.json, source.spm and target.spm into")
      ->required();
  CLI::App* hf = cmd->add_subcommand("hf", "a Hugging Face MarianMT folder (config.json, model.safetensors, vocab.json, "
                                           "source.spm, target.spm)");
  hf->add_option("folder", o->hf_dir, "the Hugging Face model's folder")->required();
  hf->add_option("-o,--output", o->output, "the folder to write model.safetensors, vocabulary.json, source.spm and target.spm into")->required();
  return [cmd, marian, hf, o] {
    if (!*cmd) return -1;
    if (*marian) {
      refuse_existing_import(o->output);  // before the work of converting (import_huggingface checks too)
      return finish(import_marian(o->marian), o->output);
    }
    if (*hf) {
      const transformer::ImportResult r = transformer::import_huggingface(o->hf_dir, o->output);
      for (const std::string& note : r.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
      std::printf("%s\n", r.model_path.c_str());
      return 0;
    }
    return -1;
  };
}

}  // namespace

static const Command kCommand(55, add_import);

}  // namespace tfm::cli
