#pragma once
// Model files as a whole (docs/checkpoint-format.md): what one holds, and checkpoint averaging.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "transformer/error.h"
#include "transformer/model_config.h"
#include "transformer/translator.h"

namespace transformer {

struct ModelInfo {
  std::string path;
  int64_t file_bytes = 0;
  std::string vocab_fingerprint;  // "" if the file records none
  std::string checksum;           // "" if the file records none (format version 1)
  bool checksum_verified = false;
  // The configuration, field by field as in JSON ("d_model" → "512"), in the documented order.
  std::vector<std::pair<std::string, std::string>> config;
  int64_t head_dim = 0;
  bool tied_embeddings = true;  // one embedding matrix for source and target
  bool tied_output = true;      // the output projection is the target embedding (else a matrix of its own)
  int64_t encoder_layers = 0, decoder_layers = 0;  // 0 for a stack the architecture does not have
  // Parameter counts: the embeddings (with learned positions, token types and their norm) and the
  // output side (its own matrix, the logits' bias, the masked-LM head, where the model has them),
  // the encoder's and the decoder's layers, and all of them.
  int64_t embedding_parameters = 0, encoder_parameters = 0, decoder_parameters = 0, total_parameters = 0;
  std::map<std::string, std::string> metadata;  // the file's other metadata (e.g. averaged_from)
  LoadNotes notes;
};

// Reads and validates a model or checkpoint file (every check of loading; the checksum unless
// `verify` is false) and describes it.
ModelInfo model_info(const std::string& path, bool verify = true);

// A model of `config` with freshly initialised parameters (Xavier-uniform linear weights, zero
// biases, unit layer-norm gains, embeddings N(0, D^−½): a pure function of the seed), written
// atomically to `output`; for tests and benchmarks. Returns its number of parameters.
int64_t init_model(const ModelConfig& config, uint64_t seed, const std::string& output);

// The element-wise mean of the parameters of several model or checkpoint files of one configuration
// (the paper averaged the last 5 checkpoints, §6.1), written atomically to `output` as a model file.
// Inputs of different configurations or vocabularies are refused. Returns the loader's notes.
LoadNotes average_checkpoints(const std::vector<std::string>& inputs, const std::string& output, bool verify = true);

}  // namespace transformer
