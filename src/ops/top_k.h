#pragma once
// The decoding step's selection: for each row of logits [R, V], the k most probable tokens among
// those allowed and the row's log Σ exp — read-only (raw logits rank like log-probabilities; float
// logits in one pass per row), and no [R, V] array of log-probabilities.
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace tfm::ops {

// logits: [R, V] (float32 or float64); banned: ids never returned (they still count in the sum).
// logp: float64 [R, k], the selected tokens' log-probabilities, best first (ties: lower id first);
// ids: int32 [R, k] (−1 where a row has fewer than k allowed tokens); lse: float64 [R].
// Float32 logits on a GPU with the outputs there: selected by the GPU's kernel (k ≤ 16, at most 8
// banned ids; lse summed in double), so that only the k best per row come back to the host; else
// (and for float64) on the host, the logits copied over.
void top_k_logprobs(const Tensor& logits, int64_t k, const std::vector<int32_t>& banned, const Tensor& logp,
                    const Tensor& ids, const Tensor& lse);

}  // namespace tfm::ops
