#pragma once
// The public exact-match score (include/transformer/metrics.h), under the library's internal namespace.
#include "transformer/metrics.h"

namespace tfm {
using transformer::ExactMatch;
using transformer::exact_match;
}  // namespace tfm
