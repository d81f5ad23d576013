#include "cli/model_io.h"

#include <cstdio>

namespace tfm::cli {

void add_model_options(CLI::App& cmd, ModelPaths& paths) {
  cmd.add_option("-m,--model", paths.model, "model file (.safetensors)")->required();
  cmd.add_option("--vocab", paths.vocab, "the vocabulary: a SentencePiece model or an imported model's vocabulary.json (default: vocab.model, else vocabulary.json, beside the model)");
  add_no_verify_flag(cmd, paths.no_verify);
}

void add_no_verify_flag(CLI::App& cmd, bool& no_verify) {
  cmd.add_flag("--no-verify", no_verify,
               "skip the model file's checksum (loads faster; damaged weights then go unnoticed unless they are "
               "not finite)");
}

void print_notes(const transformer::LoadNotes& notes) {
  for (const std::string& n : notes.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  for (const std::string& w : notes.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
}

}  // namespace tfm::cli
