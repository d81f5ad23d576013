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
inline constexpr const char* kModelFormatVersion = "1";
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

// Builds the model the file describes and loads its parameters. Every parameter must be present
// with the shape the configuration implies; tensors other than parameters and "optimizer.*" are
// an error. dtype: of the model built (float32 for use; float64 for checks).
std::unique_ptr<Transformer> load_model(const SafetensorsFile& file, DType dtype = DType::F32);
std::unique_ptr<Transformer> load_model(const std::string& path, DType dtype = DType::F32);

}  // namespace tfm
