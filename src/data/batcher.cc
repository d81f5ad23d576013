#include "data/batcher.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace tfm {

std::vector<std::vector<int32_t>> plan_batches(const std::vector<Example>& examples, int64_t max_tokens) {
  TFM_CHECK(max_tokens >= 1, "batch size in tokens must be >= 1, got ", max_tokens);
  std::vector<int32_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  // By target length, then source length, then position: stable and machine-independent.
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const auto& x = examples[a];
    const auto& y = examples[b];
    return x.tgt.size() != y.tgt.size() ? x.tgt.size() < y.tgt.size() : x.src.size() < y.src.size();
  });
  std::vector<std::vector<int32_t>> batches;
  std::vector<int32_t> current;
  int64_t longest_src = 0, longest_tgt = 0;
  for (int32_t i : order) {
    const int64_t s = static_cast<int64_t>(examples[i].src.size()) + 1, t = static_cast<int64_t>(examples[i].tgt.size()) + 1;
    const int64_t n = static_cast<int64_t>(current.size()) + 1;
    if (!current.empty() && (n * std::max(longest_src, s) > max_tokens || n * std::max(longest_tgt, t) > max_tokens)) {
      batches.push_back(std::move(current));
      current.clear();
      longest_src = longest_tgt = 0;
    }
    current.push_back(i);
    longest_src = std::max(longest_src, s);
    longest_tgt = std::max(longest_tgt, t);
  }
  if (!current.empty()) batches.push_back(std::move(current));
  return batches;
}

std::vector<int32_t> epoch_order(int64_t batches, uint64_t seed, int64_t epoch) {
  std::vector<int32_t> order(static_cast<size_t>(batches));
  std::iota(order.begin(), order.end(), 0);
  // Fisher–Yates with Philox draws: the same permutation on every machine.
  const RngStream rng{seed, 0xba7c0000ull + static_cast<uint64_t>(epoch)};
  for (int64_t i = batches - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.uniform(static_cast<uint64_t>(i)) * static_cast<float>(i + 1));
    std::swap(order[i], order[std::min(j, i)]);
  }
  return order;
}

}  // namespace tfm
