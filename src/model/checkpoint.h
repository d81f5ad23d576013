#pragma once
// A model file is a safetensors file (docs/checkpoint-format.md): each parameter under its name,
// float32, and in the metadata the model configuration as JSON. Training checkpoints add tensors
// under "optimizer." and metadata of their own, which loading a model skips.
#include <map>
#include <memory>
#include <string>

#include "io/safetensors.h"
#include "model/transformer.h"

namespace tfm {

inline constexpr const char* kModelFormat = "tfm-transformer";
// Version 2 records a checksum of the file (io/safetensors.h) and requires it; version 1 files,
// written before checksums, have none and still load, unverified.
inline constexpr const char* kModelFormatVersion = "2";
// Metadata: Vocab::fingerprint() of the vocabulary the model was trained with (absent in files made
// without one, e.g. by `init`); translate, score, attention and resuming refuse a vocabulary with
// another fingerprint, average refuses inputs with different ones.
inline constexpr const char* kVocabFingerprintKey = "vocab_fingerprint";

// Writes atomically; `extra` metadata (strings) and `extra_tensors` join the parameters.
void save_model(const Transformer& model, const std::string& path,
                const std::map<std::string, std::string>& extra = {},
                const std::vector<NamedTensor>& extra_tensors = {});

// Reads the configuration from a validated file (throws naming the problem).
ModelConfig read_model_config(const SafetensorsFile& file);

// Whether loading checks the file's checksum. Skipping it saves one hash of the file's bytes
// (docs/checkpoint-format.md gives the cost); the checks of structure and of finite values stay.
enum class Checksums { kVerify, kSkip };

// Builds the model the file describes and loads its parameters. Every parameter must be present
// with the shape the configuration implies, and finite; tensors other than parameters and
// "optimizer.*" are an error; with kVerify, a file whose bytes do not match its checksum is an
// error. A file without a checksum (format version 1, file.has_checksum() is false) loads
// unverified: callers that talk to a user say so. dtype: of the model built (float32 for use;
// float64 for checks).
std::unique_ptr<Transformer> load_model(const SafetensorsFile& file, DType dtype = DType::F32,
                                        Checksums checksums = Checksums::kVerify);
std::unique_ptr<Transformer> load_model(const std::string& path, DType dtype = DType::F32,
                                        Checksums checksums = Checksums::kVerify);

}  // namespace tfm
