#pragma once
// Cross-entropy with label smoothing (Szegedy et al., 2016) over a fused log-softmax, as PyTorch's
// CrossEntropyLoss(label_smoothing = ε, ignore_index = pad): the target distribution is
// q = (1 − ε)·onehot(y) + ε/V, and the loss of a row is −Σ_v q_v · log softmax(z)_v
//   = lse(z) − (1 − ε)·z_y − (ε/V)·Σ_v z_v,   lse = log Σ exp z.
// Rows whose target is `ignore_index` (padding) contribute nothing.
#include <cstdint>

#include "core/tensor.h"

namespace tfm::ops {

struct LossArgs {
  double smoothing = 0.0;    // ε
  int32_t ignore_index = -1; // targets equal to this are skipped (padding)
};

struct LossSum {
  double loss = 0.0;   // Σ over counted rows
  int64_t tokens = 0;  // rows counted (target ≠ ignore_index)
};

// logits: [N, V], targets: int32 [N], lse: [N] (saved for the backward). Throws on a target
// outside [0, V) that is not ignore_index, naming it and its row.
LossSum cross_entropy(const Tensor& logits, const Tensor& targets, const LossArgs& args, const Tensor& lse);

// dlogits += dloss · (softmax(z) − q) on counted rows (pass dloss = 1 / tokens for the mean).
void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const LossArgs& args,
                            double dloss, const Tensor& dlogits);

// The same gradient written over the logits themselves: z ← dloss · (softmax(z) − q) on counted
// rows, 0 on ignored ones. For training, where the logits are not needed after the loss: no
// second [N, V] buffer (the largest tensors of a step) to allocate, zero and read.
void cross_entropy_backward_in_place(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                     const LossArgs& args, double dloss);

// The same gradient as bf16 training's output projection reads it: written (not added) into
// dlogits16 (bfloat16 [N, V]), each value cross_entropy_backward's float32 one rounded, while its
// row is in the cache; the logits (float32) are left as they are. One pass instead of writing the
// float32 gradient and rounding it in a second.
void cross_entropy_backward_bf16(const Tensor& logits, const Tensor& targets, const Tensor& lse, const LossArgs& args,
                                 double dloss, const Tensor& dlogits16);

}  // namespace tfm::ops
