#pragma once
// Multi-head attention (§3.2.2): MultiHead(Q, K, V) = Concat(head_1..head_H) · W^O, with
// head_i = Attention(Q·W_i^Q, K·W_i^K, V·W_i^V). The H heads' projections are one D×D matrix each
// for Q, K and V, their outputs side by side (head h = columns [h·D/H, (h+1)·D/H)); with fewer
// key/value heads (grouped-query attention) K's and V's are KV·D/H × D. Self-attention's variants:
// rotary positions on the queries and keys after their projections, a sliding window.
#include <string>
#include <tuple>

#include "layers/linear.h"
#include "ops/attention.h"
#include "ops/rotary.h"

namespace tfm {

// Which keys each query may see.
struct AttentionMask {
  bool causal = false;      // decoder self-attention: no looking ahead
  Tensor key_lengths = {};  // int32 [B]: keys at or past the length are padding; undefined: none
  int64_t kv_group = 1;     // query entries per key/value entry (decoding: beams share the encoder output)
  Tensor key_rows = {};     // int32 [B, L]: keys and values in a decoding cache's slabs (ops::AttentionArgs)
};

// What a self-attention may add to the paper's (ModelConfig: kv_heads, positions rope, attention_window).
struct AttentionVariant {
  int64_t kv_heads = 0;  // key/value heads, dividing heads; 0: heads
  ops::Rotary rope{};    // rope.dims 0: no rotary positions
  int64_t window = 0;    // sliding window (ops::AttentionArgs::window); 0: none
};

class MultiHeadAttention {
 public:
  struct Saved {
    Tensor xq, xkv;     // inputs: [B, T, D], [B, S, D]
    Tensor q, k, v;     // projections (rotated with rope): [B, T, D], [B, S, KV], [B, S, KV]
    Tensor probs;       // attention weights: [B, H, T, S]
    Tensor heads_out;   // concatenated heads before W^O: [B, T, D]
    ops::AttentionArgs args;
  };

  MultiHeadAttention() = default;
  // Registers `<name>.{q,k,v,out}_proj.weight` and, with `bias`, their `.bias`.
  MultiHeadAttention(ParamStore& params, const std::string& name, int64_t d_model, int64_t heads,
                     double attention_dropout, bool bias = true, const AttentionVariant& variant = {});

  // The width of the keys and values (k_proj's and v_proj's outputs), KV: D / heads per key/value head.
  static int64_t kv_width(int64_t d_model, int64_t heads, int64_t kv_heads) {
    return d_model / heads * (kv_heads > 0 ? kv_heads : heads);
  }
  int64_t kv_width() const { return k_proj.out; }

  // xq: [B, T, D] (queries), xkv: [B, S, D] (keys and values; the same tensor for self-attention)
  // → [B, T, D]; with a residual r [B, T, D], r + that, added by the output projection's call
  // (Linear::forward). With rope, query t and key s are at positions t and s.
  Tensor forward(const Context& ctx, const Tensor& xq, const Tensor& xkv, const AttentionMask& mask,
                 Saved* saved, const Tensor& residual = Tensor()) const;
  // The pieces of forward, for incremental decoding over an encoder's output (no rope): keys and
  // values of xkv [B, S, D] (each [B, S, KV]); then attention of queries xq [B, T, D] over given keys
  // and values → [B, T, D] (with mask.key_rows, keys and values in a decoding cache's slabs [L, C, KV]).
  std::pair<Tensor, Tensor> project_kv(const Context& ctx, const Tensor& xkv) const;
  Tensor attend(const Context& ctx, const Tensor& xq, const Tensor& k, const Tensor& v, const AttentionMask& mask,
                Saved* saved, const Tensor& residual = Tensor()) const;
  // Self-attention's queries, keys and values of x [B, T, D] ([B, T, D], [B, T, KV] twice): one
  // product when the context holds Q, K and V fused (fused_key(q_proj.weight): Transformer::pack_weights
  // and quantize_int8 make it for the decoder's steps), else three. Keys and values go into k_out and
  // v_out when given ([B, T, KV] each, e.g. a decoding cache's position: ops::split_columns writes
  // them from the fused product directly), and those are returned. With rope, queries and keys are
  // rotated for positions [position, position + T).
  std::tuple<Tensor, Tensor, Tensor> project_qkv(const Context& ctx, const Tensor& x, const Tensor& k_out = Tensor(),
                                                 const Tensor& v_out = Tensor(), int64_t position = 0) const;
  // attend() with the queries' projection q [B, T, D] of xq already made.
  Tensor attend_projected(const Context& ctx, const Tensor& xq, const Tensor& q, const Tensor& k, const Tensor& v,
                          const AttentionMask& mask, Saved* saved, const Tensor& residual = Tensor()) const;

  // Accumulates the parameters' gradients, dxq += dL/dxq and dxkv += dL/dxkv (pass the same tensor
  // twice for self-attention).
  void backward(const Context& ctx, const Saved& saved, const Tensor& dy, const Tensor& dxq,
                const Tensor& dxkv) const;

  Linear q_proj, k_proj, v_proj, out_proj;
  int64_t heads = 1;
  double attention_dropout = 0.0;
  AttentionVariant variant;  // kv_heads resolved (never 0)

 private:
  // Rotates q [B, T, D] and k [B, T, KV] in place for positions [position, position + T) (rope only);
  // inverse: the backward's rotation of their gradients.
  void rotate(const Tensor& q, const Tensor& k, int64_t position, bool inverse = false) const;
};

}  // namespace tfm
