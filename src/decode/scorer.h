#pragma once
// A batch scored under teacher forcing: the model's logits at each target position and their
// cross-entropy against the targets, shared by training's loss, validation's and scoring's.
#include <vector>

#include "layers/context.h"
#include "model/batch.h"
#include "model/transformer.h"
#include "ops/loss.h"

namespace tfm {

struct ScoredBatch {
  Tensor logits;     // [B, T, V]
  Tensor flat;       // the same logits as [B·T, V]
  Tensor targets;    // int32 [B·T]: the batch's tgt_out, row by row
  Tensor lse;        // [B·T]: each row's log Σ exp(logits), what the loss's backward reuses
  ops::LossSum sum;  // the cross-entropy summed over the target tokens, and their count
};

// The forward pass over `batch` (saving what backward needs when `saved`), then the cross-entropy
// with label smoothing `smoothing` (0: the plain negative log-likelihood), padding skipped.
ScoredBatch score_batch(const Transformer& model, const Context& ctx, const Batch& batch, double smoothing,
                        Transformer::Saved* saved);

// Each target sentence's log-probability, Σ over its tokens of logit(target) − lse, read on the
// host (a model on a GPU computed them there).
std::vector<double> sentence_log_probs(const Batch& batch, const ScoredBatch& scored);

}  // namespace tfm
