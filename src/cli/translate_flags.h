#pragma once
// translate's flags: what the command line gives, bound to the library's option structs where they
// have a field (their defaults are the structs'), and their definitions and help.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/model_io.h"
#include "transformer/translator.h"

namespace tfm::cli {

struct TranslateFlags {
  ModelPaths paths;
  std::string input, attention_path, shortlist_path, prefix_path;
  transformer::TranslateOptions translate;
  bool scores = false, ids = false, int8 = false, bf16 = false, stats = false, packed = true;
  int64_t threads = transformer::TranslatorOptions{}.threads;  // wider than the field: checked, then narrowed
  int64_t chunk_lines = 10000;
  std::string device = transformer::TranslatorOptions{}.device;
  double max_memory_gib = -1;  // -1: automatic
  // SearchOptions::seed, parsed as an unsigned 64-bit integer
  std::string seed = std::to_string(transformer::SearchOptions{}.seed);
  bool seed_given = false;     // --seed was on the command line
};

// The sampling flags (--sampling-topk/-topp/-temperature, --seed as text), shared with generate.
void add_sampling_flags(CLI::App& cmd, transformer::SearchOptions& search, std::string& seed);
// Checks the sampling options naming their flags; `what` names one output ("translation").
void check_sampling_flags(const transformer::SearchOptions& s, const char* what);
// --seed: an unsigned 64-bit integer, written in decimal.
uint64_t parse_seed(const std::string& text);

// Adds translate's flags to its subcommand, in the order --help lists them.
void add_translate_flags(CLI::App& cmd, TranslateFlags& o);

}  // namespace tfm::cli
