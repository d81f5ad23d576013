#pragma once
// Vocabulary shortlists (`translate --shortlist`, TranslatorOptions::shortlist): for each source
// token the target tokens that most often translate it, plus the most frequent target tokens; a
// batch's decoding then scores only the union of its sources' lists (docs/performance.md gives
// the speed-up; translations may change).
#include <cstdint>
#include <string>

namespace transformer {

struct ShortlistOptions {
  int64_t per_source = 100;  // best target tokens kept per source token (Marian's default)
  int64_t frequent = 100;    // most frequent target tokens, allowed in every batch (Marian's default)

  void validate() const;  // throws Error naming the option out of range
};

struct ShortlistSummary {
  std::string corpus;        // what was read: pairs, kept, skipped and why
  int64_t frequent = 0;      // frequent target tokens in the list
};

// Builds a shortlist from parallel text files (one sentence per line, aligned), encoded with the
// model's SentencePiece vocabulary, and writes it atomically to `output`.
ShortlistSummary build_shortlist(const std::string& source, const std::string& target, const std::string& vocab,
                                 const std::string& output, const ShortlistOptions& options = {});

}  // namespace transformer
