#pragma once
// Batches by tokens (§5.1): sentences of similar length together, each batch holding at most
// max_tokens tokens per side including padding (B · longest ≤ max_tokens, the longest counting
// the EOS or BOS it gets), so that little is wasted on padding and memory stays bounded. The
// batches are fixed; their order is shuffled every epoch from the seed.
#include <cstdint>
#include <vector>

namespace tfm {

struct Example {
  std::vector<int32_t> src, tgt;  // token ids without special tokens
};

// Indices into `examples`, one vector per batch; deterministic.
std::vector<std::vector<int32_t>> plan_batches(const std::vector<Example>& examples, int64_t max_tokens);

// The batch order of epoch `epoch`: a permutation of [0, batches), a pure function of its arguments.
std::vector<int32_t> epoch_order(int64_t batches, uint64_t seed, int64_t epoch);

}  // namespace tfm
