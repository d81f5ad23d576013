// Masked-LM corruption: choosing the positions, and what each chosen token becomes.
#include "data/masking.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/rng.h"

namespace tfm {

namespace {

bool is_special(int32_t id, const std::vector<int32_t>& special) {
  return std::find(special.begin(), special.end(), id) != special.end();
}

// A uniform ordinary id: the k-th id of [0, V) that is not special.
int32_t random_ordinary(double u, const MaskingOptions& o, const std::vector<int32_t>& sorted_special) {
  int64_t specials_in_range = 0;
  for (const int32_t s : sorted_special) specials_in_range += s >= 0 && s < o.vocab_size;
  const int64_t ordinary = o.vocab_size - specials_in_range;
  auto id = static_cast<int64_t>(u * static_cast<double>(ordinary));
  id = std::min(id, ordinary - 1);
  for (const int32_t s : sorted_special)  // skip over the specials at or below it, in order
    if (s >= 0 && s <= id) ++id;
  return static_cast<int32_t>(id);
}

}  // namespace

int64_t masked_count(int64_t ordinary, double fraction) {
  if (ordinary <= 0) return 0;
  return std::clamp<int64_t>(std::llround(fraction * static_cast<double>(ordinary)), 1, ordinary);
}

int64_t masked_count(const std::vector<int32_t>& ids, const MaskingOptions& o) {
  int64_t ordinary = 0;
  for (const int32_t id : ids) ordinary += id != o.mask_id && !is_special(id, o.special);
  return masked_count(ordinary, o.fraction);
}

MaskedSequence mask_tokens(const std::vector<int32_t>& ids, const MaskingOptions& o, uint64_t stream, int32_t ignore) {
  TFM_CHECK(o.mask_id >= 0 && o.mask_id < o.vocab_size, "masking: mask id ", o.mask_id, " is outside the vocabulary [0, ",
            o.vocab_size, ")");
  std::vector<int32_t> special = o.special;
  special.push_back(o.mask_id);
  std::sort(special.begin(), special.end());
  special.erase(std::unique(special.begin(), special.end()), special.end());
  MaskedSequence m{ids, std::vector<int32_t>(ids.size(), ignore), 0};
  std::vector<int32_t> candidates;  // the ordinary positions
  for (size_t i = 0; i < ids.size(); ++i)
    if (!is_special(ids[i], special)) candidates.push_back(static_cast<int32_t>(i));
  const int64_t k = masked_count(static_cast<int64_t>(candidates.size()), o.fraction);
  const RngStream rng{o.seed, stream};
  // A partial Fisher–Yates shuffle picks k positions; three draws each: which, and what it becomes.
  for (int64_t j = 0; j < k; ++j) {
    const auto left = static_cast<int64_t>(candidates.size()) - j;
    const auto pick = j + std::min<int64_t>(left - 1, static_cast<int64_t>(rng.uniform_double(3 * j) * left));
    std::swap(candidates[j], candidates[pick]);
    const auto at = static_cast<size_t>(candidates[j]);
    m.targets[at] = ids[at];
    const double what = rng.uniform_double(3 * j + 1);
    if (what < 0.8) m.input[at] = o.mask_id;
    else if (what < 0.9) m.input[at] = random_ordinary(rng.uniform_double(3 * j + 2), o, special);
  }
  m.chosen = k;
  return m;
}

uint64_t masking_stream(int64_t round, int64_t index) {
  // Apart from dropout's streams (counted up from 0): the top bit set, the round above the index.
  return (uint64_t{1} << 63) | (static_cast<uint64_t>(round) << 32) | static_cast<uint64_t>(index);
}

}  // namespace tfm
