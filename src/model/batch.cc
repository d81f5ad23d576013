#include "model/batch.h"

#include <algorithm>

namespace tfm {

Batch make_batch(const std::vector<std::vector<int32_t>>& sources, const std::vector<std::vector<int32_t>>& targets,
                 const ModelConfig& config) {
  TFM_CHECK(sources.size() == targets.size(), "make_batch: ", sources.size(), " sources but ", targets.size(),
            " targets");
  TFM_CHECK(!sources.empty(), "make_batch: empty batch");
  const int64_t B = static_cast<int64_t>(sources.size());
  int64_t S = 0, T = 0;
  for (int64_t b = 0; b < B; ++b) {
    S = std::max<int64_t>(S, static_cast<int64_t>(sources[b].size()) + 1);
    T = std::max<int64_t>(T, static_cast<int64_t>(targets[b].size()) + 1);
    for (const auto* seq : {&sources[b], &targets[b]})
      for (int32_t id : *seq)
        TFM_CHECK(id >= 0 && id < config.vocab_size, "make_batch: token id ", id, " in sentence ", b,
                  " is outside the vocabulary [0, ", config.vocab_size, ")");
  }
  Batch batch;
  batch.src = Tensor::empty({B, S}, DType::I32);
  batch.tgt_in = Tensor::empty({B, T}, DType::I32);
  batch.tgt_out = Tensor::empty({B, T}, DType::I32);
  batch.src.fill(config.pad_id);
  batch.tgt_in.fill(config.pad_id);
  batch.tgt_out.fill(config.pad_id);
  batch.src_lengths = Tensor::empty({B}, DType::I32);
  batch.tgt_lengths = Tensor::empty({B}, DType::I32);
  for (int64_t b = 0; b < B; ++b) {
    int32_t* src = batch.src.data<int32_t>() + b * S;
    int32_t* in = batch.tgt_in.data<int32_t>() + b * T;
    int32_t* out = batch.tgt_out.data<int32_t>() + b * T;
    const auto& x = sources[b];
    const auto& y = targets[b];
    std::copy(x.begin(), x.end(), src);
    src[x.size()] = config.eos_id;
    in[0] = config.bos_id;
    std::copy(y.begin(), y.end(), in + 1);
    std::copy(y.begin(), y.end(), out);
    out[y.size()] = config.eos_id;
    batch.src_lengths.data<int32_t>()[b] = static_cast<int32_t>(x.size() + 1);
    batch.tgt_lengths.data<int32_t>()[b] = static_cast<int32_t>(y.size() + 1);
    batch.source_tokens += static_cast<int64_t>(x.size() + 1);
    batch.target_tokens += static_cast<int64_t>(y.size() + 1);
  }
  return batch;
}

namespace {
// Without BOS the first token is context only: make_batch's targets of the sequences' tails (y_2 ..
// y_n, EOS), their inputs starting from y_1 instead of BOS.
Batch lm_batch_without_bos(const std::vector<std::vector<int32_t>>& sequences, const ModelConfig& config) {
  std::vector<std::vector<int32_t>> tails;
  for (size_t b = 0; b < sequences.size(); ++b) {
    TFM_CHECK(!sequences[b].empty(), "sequence ", b, " is empty, and this model puts no BOS before a sequence "
              "(bos_id -1): its first token is the context of the others, so it needs at least one");
    tails.emplace_back(sequences[b].begin() + 1, sequences[b].end());
  }
  Batch batch = make_batch(std::vector<std::vector<int32_t>>(sequences.size()), tails, config);
  const int64_t T = batch.tgt_in.size(1);
  for (size_t b = 0; b < sequences.size(); ++b) {
    TFM_CHECK(sequences[b][0] >= 0 && sequences[b][0] < config.vocab_size, "make_batch: token id ", sequences[b][0],
              " in sentence ", b, " is outside the vocabulary [0, ", config.vocab_size, ")");
    batch.tgt_in.data<int32_t>()[static_cast<int64_t>(b) * T] = sequences[b][0];
  }
  batch.src = batch.src_lengths = Tensor();
  batch.source_tokens = 0;
  return batch;
}
}  // namespace

Batch make_lm_batch(const std::vector<std::vector<int32_t>>& sequences, const ModelConfig& config) {
  if (config.bos_id < 0) return lm_batch_without_bos(sequences, config);
  // make_batch's targets, with empty sources dropped afterwards.
  Batch batch = make_batch(std::vector<std::vector<int32_t>>(sequences.size()), sequences, config);
  batch.src = batch.src_lengths = Tensor();
  batch.source_tokens = 0;
  return batch;
}

Batch to_device(const Batch& batch, Device device) {
  Batch out = batch;
  for (Tensor* t : {&out.src, &out.src_lengths, &out.tgt_in, &out.tgt_out, &out.tgt_lengths, &out.token_types})
    if (t->defined() && t->device() != device) *t = t->to_device(device);
  return out;
}

}  // namespace tfm
