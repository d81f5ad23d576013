#pragma once
// Scaled dot-product attention (Vaswani et al., 2017, §3.2.1) for H heads at once:
//   P = softmax(Q·Kᵀ / √d_k + mask),  O = dropout(P) · V,  per batch entry and head.
// Dimension letters: B batch, T queries, S keys, H heads, d_k = d_v = per-head width.
// Q, K, V and O keep the heads side by side in the last dim, as the projections produce them:
// head h is columns [h·d_k, (h+1)·d_k). No transposes are needed before or after.
#include "core/rng.h"
#include "core/tensor.h"

namespace tfm::ops {

struct AttentionArgs {
  int heads = 1;
  // Causal mask: query t sees keys s ≤ t + (S − T) (the last query sees every key; with S = T,
  // the usual lower triangle; with a cache of earlier keys, each new query sees all before it).
  bool causal = false;
  // Key padding: int32 [B], keys s ≥ key_lengths[b] get zero weight. Undefined: no padding.
  // key_lengths and key_rows may be on the host or on q's device; host values are checked at each
  // call, a device's are not (reading them back would wait for the device): their makers check them
  // (make_batch's lengths are right by construction; Transformer::decode_step checks its own before
  // each upload), and the kernels take lengths beyond S as S and below 0 as 0.
  Tensor key_lengths;
  // Query batch entries per key/value entry: k and v hold B / kv_group entries, entry b / kv_group
  // serving query entry b (the beams of a sentence share its encoder output). Forward only.
  int64_t kv_group = 1;
  // A decoding cache shared by hypotheses (beam search), int32 [B, S]: key s of query entry b is row
  // key_rows[b, s] of position s's slab, k and v being [S, R, H·d] (each decoding step writes its B
  // ≤ R hypotheses' keys into one slab; hypotheses with a common prefix read the same rows, so that
  // reordering beams moves no keys). Undefined: k[b / kv_group, s]. One query per entry, no
  // dropout, kv_group 1.
  Tensor key_rows;
  // Dropout on the attention weights (training); 0 disables it.
  double dropout = 0.0;
  RngStream rng;
  // Grouped-query attention: k and v hold kv_heads heads side by side ([B', S, kv_heads·d]), query
  // head h reading key/value head h / (heads / kv_heads); heads must be a multiple of it. 0 = heads
  // (one key/value head per query head); 1 = multi-query attention.
  int kv_heads = 0;
  // Sliding window: query t, at position i = t + (S − T) (the causal mask's alignment), sees key s
  // only when i − window < s (and s ≤ i when causal). 0 = no window.
  int64_t window = 0;
};

// q: [B, T, H·d_k], k: [B / kv_group, S, KV·d_k], v: [B / kv_group, S, KV·d_v] → out: [B, T, H·d_v],
// KV = kv_heads (with key_rows, k: [S, R, KV·d_k] and v: [S, R, KV·d_v]).
// probs: [B, H, T, S], the weights after masking and softmax and before dropout (saved for the
// backward; also what a person inspects). Masked keys get exactly zero weight; a query whose keys
// are all masked gets all-zero weights and a zero output, never NaN.
void attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionArgs& args, const Tensor& probs,
               const Tensor& out);

// With P̃ = dropout(P): dV += P̃ᵀ·dO; dP̃ = dO·Vᵀ; dP = dropout(dP̃) with the same mask;
// dZ = P ⊙ (dP − Σ_s dP ⊙ P); dQ += dZ·K / √d_k; dK += dZᵀ·Q / √d_k. Accumulates into dq, dk, dv;
// a key/value head's dk and dv get the sum over the query heads that read it, in head order. The
// masks (padding, causal, window) act through probs, whose masked weights are zero.
void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionArgs& args,
                        const Tensor& probs, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv);

}  // namespace tfm::ops
