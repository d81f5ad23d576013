#pragma once
// What incremental decoding keeps between steps (Transformer::start_decoding, decode_step, reorder
// and restrict_output, in model/decoding.cc).
#include <vector>

#include "core/tensor.h"
#include "ops/weight.h"

namespace tfm {

// Incremental decoding (one token per hypothesis per step; dimension letters in layers/context.h).
// Of the R hypotheses (sentences × beams), hypothesis r reads entry r / kv_group of the B_s
// encoder outputs, so the beams of a sentence share it. Rows can be reordered or dropped between
// steps (Transformer::reorder).
struct DecodeState {
  Tensor src_lengths;                      // int32 [R], on the host
  std::vector<Tensor> memory_k, memory_v;  // per decoder layer: the encoder output's keys, values [B_s, S, D]
  int64_t kv_group = 1;                    // R / B_s
  // Per decoder layer: the keys, values of the tokens so far [L, C, KV] (KV: the self-attention's
  // key/value width, D without grouped-query heads), a slab of C rows per position
  // (C ≥ R, the most hypotheses at once). Step t writes hypothesis b's keys into row b of slab t;
  // key_rows (int32 [R, L]) says which row of each slab hypothesis b reads, so that reordering
  // hypotheses (beam search) copies their rows of key_rows and no keys or values.
  std::vector<Tensor> self_k, self_v;      // [L, C, KV] each
  Tensor key_rows;                         // int32 [R, L]
  Tensor step_lengths;                     // int32 [R]: tokens visible to self-attention this step
  // step_lengths, key_rows and src_lengths where the attention reads them (the model's device), made
  // once a step by decode_step: on a GPU one upload each a step, not one each per decoder layer.
  // int32 [R], [R, L] (with a sliding window [R, length + 1], the positions so far), [R].
  Tensor step_lengths_there, key_rows_there, src_lengths_there;
  int64_t length = 0;                      // tokens decoded so far (< L, the cache's capacity)
  bool record_attention = false;           // keep each layer's encoder-decoder attention of the last step
  std::vector<Tensor> cross_attention;     // per decoder layer: [R, H, 1, S] (when recorded)
  // With a vocabulary shortlist (Transformer::restrict_output): the target ids the output projection
  // scores, int32 [V'], and their rows of the target embedding [V', D] in the form of the whole
  // (ops::select_rows: float32, packed anew when the model's weights are packed, or int8 rows when
  // the model is quantized); undefined: all V.
  Tensor output_ids;
  ops::Weight output_weight;  // [V', D]
  Tensor output_bias;  // the logits bias of those ids [V'] (models with one)
  int64_t rows() const { return src_lengths.numel(); }
};

}  // namespace tfm
