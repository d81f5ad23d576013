#pragma once
// The public BLEU API (include/transformer/bleu.h), under the library's internal namespace.
#include "transformer/bleu.h"

namespace tfm {
using transformer::BleuTokenize;
using transformer::parse_bleu_tokenize;
using transformer::bleu_tokenize_name;
using transformer::BleuOptions;
using transformer::BleuStats;
using transformer::BleuScore;
using transformer::tokenize_13a;
using transformer::bleu_segment_stats;
using transformer::compute_bleu;
using transformer::corpus_bleu;
}  // namespace tfm
