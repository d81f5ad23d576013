#pragma once
// A padded batch of sentence pairs for teacher forcing. Shapes: B sentences, S source length,
// T target length (each the longest in the batch, with its end-of-sentence token).
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace tfm {

struct Batch {
  Tensor src;          // int32 [B, S]: x_1 .. x_m, EOS, then pad_id
  Tensor src_lengths;  // int32 [B]: m + 1
  Tensor tgt_in;       // int32 [B, T]: BOS, y_1 .. y_n (the decoder's input, shifted right), then pad_id
  Tensor tgt_out;      // int32 [B, T]: y_1 .. y_n, EOS (what the decoder predicts), then pad_id
  Tensor tgt_lengths;  // int32 [B]: n + 1
  Tensor token_types;  // int32 [B, S]: segment ids of src (encoder-only models); undefined: type 0
  int64_t source_tokens = 0;  // Σ m + 1
  int64_t target_tokens = 0;  // Σ n + 1, the tokens the loss counts

  int64_t size() const { return src.size(0); }
};

// Builds a batch from token ids without special tokens (the vocabulary's encoding of each line).
// Throws on an id outside the vocabulary or on mismatched counts.
Batch make_batch(const std::vector<std::vector<int32_t>>& sources, const std::vector<std::vector<int32_t>>& targets,
                 const ModelConfig& config);

// A decoder-only model's batch of token sequences (ids without special tokens), as make_batch's
// targets: tgt_in bos_id, y_1 .. y_n; tgt_out the next tokens y_1 .. y_n, EOS; no source. With
// bos_id −1 (no BOS: Hugging Face's GPT-2, Qwen2) y_1 is context only: tgt_in y_1 .. y_n, tgt_out
// y_2 .. y_n, EOS (each sequence needs a token).
Batch make_lm_batch(const std::vector<std::vector<int32_t>>& sequences, const ModelConfig& config);

// The batch's tensors copied to `device` (the counts as they are).
Batch to_device(const Batch& batch, Device device);

}  // namespace tfm
