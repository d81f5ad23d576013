// The teacher-forced forward pass and cross-entropy of a batch, and its sentences' log-probabilities.
#include "decode/scorer.h"

namespace tfm {

ScoredBatch score_batch(const Transformer& model, const Context& ctx, const Batch& batch, double smoothing,
                        Transformer::Saved* saved) {
  ScoredBatch s;
  const int64_t V = model.config().vocab_size;
  s.logits = model.forward(ctx, batch, saved);                                // [B, T, V]
  s.flat = s.logits.view({s.logits.shape().rows(), V});                       // [B·T, V]
  s.targets = batch.tgt_out.view({batch.tgt_out.numel()});                    // [B·T]
  s.lse = Tensor::empty({s.flat.size(0)}, s.flat.dtype(), s.flat.device());  // [B·T]
  s.sum = ops::cross_entropy(s.flat, s.targets, {smoothing, model.config().pad_id}, s.lse);
  return s;
}

std::vector<double> sentence_log_probs(const Batch& batch, const ScoredBatch& scored) {
  const Tensor flat = scored.flat.to_host();  // [B·T, V]
  const Tensor lse = scored.lse.to_host();    // [B·T]
  const int64_t V = flat.size(1);
  const int64_t B = batch.tgt_out.size(0), T = batch.tgt_out.size(1);
  std::vector<double> out(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const int32_t len = batch.tgt_lengths.data<int32_t>()[b];
    double total = 0;
    for (int64_t t = 0; t < len; ++t) {
      const int64_t row = b * T + t;
      total += flat.data<float>()[row * V + batch.tgt_out.data<int32_t>()[row]] - lse.data<float>()[row];
    }
    out[static_cast<size_t>(b)] = total;
  }
  return out;
}

}  // namespace tfm
