#pragma once
// Embedding lookup, scaled: out[n, :] = scale · table[ids[n], :] (the paper multiplies by √d_model).
// The table may be shared (source, target, pre-softmax projection): its gradient accumulates.
#include "core/tensor.h"

namespace tfm::ops {

// ids: int32 [N] (any shape; flattened), table: [V, D], out: [N, D] (ids' shape + [D] also fits).
// An id of −1 gives a row of zeros (and no gradient): Marian's decoder starts from a zero vector
// (ModelConfig::bos_id −1), and padding without a padding token. Throws on an id outside [−1, V),
// naming it and its position.
void embedding(const Tensor& ids, const Tensor& table, double scale, const Tensor& out);
// dtable[ids[n], :] += scale · dout[n, :].
void embedding_backward(const Tensor& ids, const Tensor& dout, double scale, const Tensor& dtable);

}  // namespace tfm::ops
