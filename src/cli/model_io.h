#pragma once
// -m MODEL, --vocab and --no-verify for the commands that use a trained model. The vocabulary
// defaults to vocab.model in the model's folder, where `transformer train` writes it.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "data/vocab.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "model/transformer.h"

namespace tfm::cli {

struct ModelPaths {
  std::string model, vocab;
  bool no_verify = false;  // --no-verify: skip the model file's checksum
};

struct LoadedModel {
  std::unique_ptr<Transformer> model;
  Vocab vocab;  // loaded only when needed
  std::string vocab_fingerprint;  // of the vocabulary the model was trained with ("" if not recorded)
};

void add_model_options(CLI::App& cmd, ModelPaths& paths);
// --no-verify, for the commands that read model files (add_model_options adds it).
void add_no_verify_flag(CLI::App& cmd, bool& no_verify);
// Loads a model file, verifying its checksum unless `no_verify`; a file that records none (format
// version 1) loads with a one-line note on stderr, unless verification is off.
std::unique_ptr<Transformer> load_model_noting(const SafetensorsFile& file, bool no_verify);
// Space-separated token ids (--ids input); throws naming the line and the bad word or id (outside the
// vocabulary, or a padding, BOS or EOS id, which the model adds itself).
std::vector<int32_t> parse_ids(const std::string& line, int64_t line_number, const ModelConfig& c);
std::string join_ids(const std::vector<int32_t>& ids);

// Loads the model (load_model_noting) and the vocabulary if `need_vocab`, checking that they agree
// in size and fingerprint; a model that records no fingerprint gets a one-line warning on stderr.
LoadedModel load_model_and_vocab(const ModelPaths& paths, bool need_vocab);

}  // namespace tfm::cli
