#pragma once
// The public chrF API (include/transformer/chrf.h), under the library's internal namespace.
#include "transformer/chrf.h"

namespace tfm {
using transformer::ChrfOptions;
using transformer::ChrfStats;
using transformer::ChrfScore;
using transformer::chrf_segment_stats;
using transformer::compute_chrf;
using transformer::corpus_chrf;
}  // namespace tfm
