// A training batch's loss and gradients: the shared teacher-forced scorer, then the backward pass.
#include "train/batch_loss.h"

#include "decode/scorer.h"

namespace tfm {

ops::LossSum batch_loss(const Transformer& model, const Context& ctx, const Batch& batch, double smoothing,
                        double dloss_scale, bool backward) {
  Transformer::Saved saved;
  const ScoredBatch scored = score_batch(model, ctx, batch, smoothing, backward ? &saved : nullptr);
  if (backward) {
    const ops::LossArgs args{smoothing, model.config().pad_id};
    if (ctx.weights16.defined() && model.output_bias < 0) {
      // bf16 activations: the output projection's backward reads dL/dlogits in bfloat16, written so
      // at once (a logits bias's gradient is summed from the float32 one, below)
      const Tensor dlogits16 = Tensor::empty(scored.logits.shape(), DType::BF16, scored.logits.device());
      ops::cross_entropy_backward_bf16(scored.flat, scored.targets, scored.lse, args, dloss_scale,
                                       dlogits16.view(scored.flat.shape()));
      model.backward(ctx, batch, saved, dlogits16);
    } else {
      // logits → dL/dlogits
      ops::cross_entropy_backward_in_place(scored.flat, scored.targets, scored.lse, args, dloss_scale);
      model.backward(ctx, batch, saved, scored.logits);
    }
  }
  return scored.sum;
}

Batch to_batch(const std::vector<Example>& examples, const std::vector<int32_t>& indices, const ModelConfig& c) {
  std::vector<std::vector<int32_t>> src, tgt;
  for (int32_t i : indices) {
    src.push_back(examples[i].src);
    tgt.push_back(examples[i].tgt);
  }
  return make_batch(src, tgt, c);
}

}  // namespace tfm
