#pragma once
// -m MODEL, --vocab and --no-verify for the commands that use a trained model, and the loader's
// notes on stderr. The vocabulary defaults to vocab.model in the model's folder, where
// `transformer train` writes it.
#include <string>

#include <CLI/CLI.hpp>

#include "transformer/translator.h"

namespace tfm::cli {

struct ModelPaths {
  std::string model, vocab;
  bool no_verify = false;  // --no-verify: skip the model file's checksum
};

void add_model_options(CLI::App& cmd, ModelPaths& paths);
// --no-verify, for the commands that read model files (add_model_options adds it).
void add_no_verify_flag(CLI::App& cmd, bool& no_verify);

// Prints the loader's notes and warnings on stderr ("note: …", "warning: …").
void print_notes(const transformer::LoadNotes& notes);

}  // namespace tfm::cli
