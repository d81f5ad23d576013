#pragma once
// Scores of translations against references: BLEU and chrF exactly as sacreBLEU 2.x computes them
// with its defaults (transformer/bleu.h, transformer/chrf.h), and exact match.
#include <cstdint>
#include <string>
#include <vector>

#include "transformer/bleu.h"
#include "transformer/chrf.h"

namespace transformer {

struct ExactMatch {
  int64_t matches = 0;   // segments equal to one of their references
  int64_t segments = 0;
  double score = 0;      // 100 · matches / segments (0 for no segments)
};

// The share of hypotheses identical to one of their references (refs[k][i] is the k-th reference of
// segment i), after Unicode lowercasing when `lowercase`, a final carriage return (CRLF files)
// ignored. Throws Error when a reference stream's length differs from the hypotheses', or (with
// lowercase) on text that is not UTF-8.
ExactMatch exact_match(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                       bool lowercase = false);

}  // namespace transformer
