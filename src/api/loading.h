#pragma once
// Loading model files for the public API: what every entry point that reads a model shares.
#include <memory>
#include <string>

#include "io/safetensors.h"
#include "model/transformer.h"
#include "transformer/translator.h"

namespace transformer::api {

// Loads a model file, verifying its checksum when `verify`; a file that records none (format
// version 1) loads with a note in `notes`, unless verification is off.
std::unique_ptr<tfm::Transformer> load_model_noting(const tfm::SafetensorsFile& file, bool verify, LoadNotes& notes);

// The fingerprint of the vocabulary the file's model was trained with ("" if not recorded).
std::string vocab_fingerprint(const tfm::SafetensorsFile& file);

}  // namespace transformer::api
