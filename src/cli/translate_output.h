#pragma once
// translate's writing: each line's translation on standard output (with its score, or its n-best
// list), the warnings of its input, and its attention record of --attention as a JSON line.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "transformer/translator.h"

namespace tfm::cli {

// How translations are written.
struct OutputFormat {
  bool ids = false;              // token ids, not text
  bool scores = false;           // the normalized score after a tab
  int64_t n_best = 1;            // more than 1: 'i ||| text ||| score' lines
  int64_t max_input_tokens = 0;  // named in the warning of a truncated line
  std::ostream* attention = nullptr;  // the --attention records, or none
  std::string attention_path;
};

// Warns of the repairs the cleaning made to a chunk's lines and prefixes (its first is line `first`).
void warn_repairs(const std::vector<transformer::Translation>& out, int64_t first);

// Writes a chunk's translations (`lines` are its input lines) with their warnings and attention
// records, then checks that standard output and the attention file took them.
void write_chunk(const transformer::Translator& t, const std::vector<transformer::Translation>& out,
                 const std::vector<std::string>& lines, int64_t first, const OutputFormat& format);

// --stats: sentences, output tokens and seconds of translation on stderr.
void print_stats(int64_t sentences, int64_t tokens, double seconds);

}  // namespace tfm::cli
