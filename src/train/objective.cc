// Batches and loss-token counts of the three training objectives.
#include "train/objective.h"

#include <algorithm>

#include "core/error.h"
#include "train/batch_loss.h"

namespace tfm {

Objective make_objective(const ModelConfig& c, double mask_fraction, int32_t mask_id, uint64_t seed) {
  Objective o;
  if (c.architecture == "decoder-only") o.kind = Objective::Kind::kCausal;
  if (c.architecture != "encoder-only") return o;
  o.kind = Objective::Kind::kMasked;
  o.masking.fraction = mask_fraction;
  o.masking.mask_id = mask_id;
  o.masking.vocab_size = c.vocab_size;
  o.masking.seed = seed;
  for (const int32_t id : {c.pad_id, c.unk_id, c.bos_id, c.eos_id, mask_id})
    if (id >= 0) o.masking.special.push_back(id);
  return o;
}

namespace {

Batch masked_batch(const Objective& objective, const std::vector<Example>& examples,
                   const std::vector<int32_t>& indices, const ModelConfig& c, int64_t round) {
  std::vector<std::vector<int32_t>> inputs, targets;
  int64_t chosen = 0;
  for (const int32_t i : indices) {
    MaskedSequence m = mask_tokens(examples[static_cast<size_t>(i)].tgt, objective.masking, masking_stream(round, i),
                                   c.pad_id);
    inputs.push_back(std::move(m.input));
    targets.push_back(std::move(m.targets));
    chosen += m.chosen;
  }
  // The masked sentences as make_batch's sources (each with its EOS), without targets.
  Batch batch = make_batch(inputs, std::vector<std::vector<int32_t>>(inputs.size()), c);
  const int64_t B = batch.src.size(0), S = batch.src.size(1);
  batch.tgt_out = Tensor::empty({B, S}, DType::I32);
  batch.tgt_out.fill(c.pad_id);
  for (int64_t b = 0; b < B; ++b)
    std::copy(targets[b].begin(), targets[b].end(), batch.tgt_out.data<int32_t>() + b * S);
  batch.tgt_in = batch.tgt_lengths = Tensor();
  batch.target_tokens = chosen;
  return batch;
}

}  // namespace

Batch objective_batch(const Objective& objective, const std::vector<Example>& examples,
                      const std::vector<int32_t>& indices, const ModelConfig& c, int64_t round) {
  switch (objective.kind) {
    case Objective::Kind::kTranslation:
      return to_batch(examples, indices, c);
    case Objective::Kind::kCausal: {
      std::vector<std::vector<int32_t>> sentences;
      for (const int32_t i : indices) sentences.push_back(examples[static_cast<size_t>(i)].tgt);
      return make_lm_batch(sentences, c);
    }
    case Objective::Kind::kMasked:
      return masked_batch(objective, examples, indices, c, round);
  }
  throw Error("objective_batch: unknown objective");
}

int64_t loss_tokens(const Objective& objective, const Example& e) {
  if (objective.kind == Objective::Kind::kMasked) return masked_count(e.tgt, objective.masking);
  return static_cast<int64_t>(e.tgt.size()) + 1;
}

}  // namespace tfm
