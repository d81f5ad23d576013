#pragma once
// Importing published models (OPUS-MT / Marian `.npz` files, Hugging Face MarianMT folders) into this
// project's format: a model file (model.safetensors) and its piece vocabulary (vocabulary.json with
// source.spm and target.spm, data/vocab.h), after which translate, score, eval, attention, info and
// serve use them as any model. How each format maps onto ModelConfig: docs/import.md.
//
// Everything is read, converted and checked in memory first (every tensor present with its shape, a
// known configuration, a vocabulary the size of the embedding); only then are files written, each
// atomically, the model file last, so a failed import leaves nothing half-written.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/vocab.h"
#include "io/safetensors.h"
#include "model/config.h"

namespace tfm {

// A converted model, not yet written.
struct ImportedModel {
  ModelConfig config;
  std::vector<NamedTensor> tensors;  // every parameter under this project's name, float32
  Vocab vocab;
  nlohmann::json provenance;          // what it was imported from ("imported_from" in the file's metadata)
  std::vector<std::string> notes;     // for the user: choices made, things ignored
};

struct MarianImport {
  std::string npz;         // model.npz
  std::string vocab;       // the vocabulary .yml (OPUS-MT ships one, shared by both sides)
  std::string target_vocab;  // a second .yml for the target side, if the model has one ("" otherwise)
  std::string source_spm, target_spm;
  // The rates of the sinusoids: "marian" (Marian's C++, which trained OPUS-MT's models; the default)
  // or "paper" (what Hugging Face's and CTranslate2's converters use for the same files).
  std::string position_frequencies = "marian";
};
ImportedModel import_marian(const MarianImport& options);

// A Hugging Face MarianMT folder: config.json, model.safetensors, vocab.json, source.spm,
// target.spm (and tokenizer_config.json).
ImportedModel import_hf(const std::string& dir);

// Checks the tensors against the configuration (builds the model) and writes `dir`/model.safetensors
// with the vocabulary beside it (creating dir). Returns the model file's path.
std::string write_imported(const ImportedModel& imported, const std::string& dir);

// An import writes a new model: a folder that already holds one (model.safetensors or
// vocabulary.json) is refused, not overwritten, which would lose that model or leave its files
// beside the new one's. Called before the work of converting.
void refuse_existing_import(const std::string& dir);

// The metadata key of a model's provenance.
inline constexpr const char* kImportedFromKey = "imported_from";

}  // namespace tfm
