#pragma once
// The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017). One
// definition serves training (teacher-forced forward and backward over a padded batch) and
// inference (the same layers, without saving activations; decoding adds its cache on top).
// Parameters live in one ParamStore: one flat buffer of values, one of gradients.
#include <vector>

#include "layers/attention.h"
#include "layers/feed_forward.h"
#include "layers/residual.h"
#include "model/batch.h"
#include "model/config.h"

namespace tfm {

class EncoderLayer {
 public:
  struct Saved {
    Residual::Saved attn_res, ffn_res;
    MultiHeadAttention::Saved attn;
    FeedForward::Saved ffn;
  };
  EncoderLayer(ParamStore& params, const std::string& name, const ModelConfig& c);
  // x: [B, S, D] → [B, S, D]
  Tensor forward(const Context& ctx, const Tensor& x, const AttentionMask& mask, Saved* saved) const;
  Tensor backward(const Context& ctx, const Saved& saved, const Tensor& dy) const;  // → dx

  MultiHeadAttention self_attn;
  FeedForward ffn;
  Residual attn_res, ffn_res;
};

class DecoderLayer {
 public:
  struct Saved {
    Residual::Saved self_res, cross_res, ffn_res;
    MultiHeadAttention::Saved self_attn, cross_attn;
    FeedForward::Saved ffn;
  };
  DecoderLayer(ParamStore& params, const std::string& name, const ModelConfig& c);
  // x: [B, T, D], memory (the encoder's output): [B, S, D] → [B, T, D]
  Tensor forward(const Context& ctx, const Tensor& x, const Tensor& memory, const AttentionMask& self_mask,
                 const AttentionMask& memory_mask, Saved* saved) const;
  // → dx; dmemory += the gradient reaching the encoder's output through this layer.
  Tensor backward(const Context& ctx, const Saved& saved, const Tensor& dy, const Tensor& dmemory) const;

  MultiHeadAttention self_attn, cross_attn;
  FeedForward ffn;
  Residual self_res, cross_res, ffn_res;
};

class Transformer {
 public:
  // Activations kept by a training forward for its backward.
  struct EmbedSaved {
    Tensor ids;         // int32 [B, L]
    RngStream dropout;
    bool dropped = false;
  };
  struct Saved {
    EmbedSaved src_embed, tgt_embed;
    std::vector<EncoderLayer::Saved> encoder;
    std::vector<DecoderLayer::Saved> decoder;
    LayerNorm::Saved encoder_norm, decoder_norm;  // pre-LN only
    Tensor hidden;  // the decoder's output: [B, T, D]
  };

  // Registers and allocates every parameter (zeros; call init_parameters or load a checkpoint).
  explicit Transformer(const ModelConfig& config, DType dtype = DType::F32);
  Transformer(const Transformer&) = delete;
  Transformer& operator=(const Transformer&) = delete;

  // Xavier-uniform linear weights, zero biases, unit layer-norm gains, embeddings N(0, D^−½):
  // a pure function of the seed.
  void init_parameters(uint64_t seed);

  // Teacher forcing: logits [B, T, V] for the batch; saves what backward needs when `saved`.
  Tensor forward(const Context& ctx, const Batch& batch, Saved* saved) const;
  // Accumulates every parameter's gradient from dlogits [B, T, V].
  void backward(const Context& ctx, const Batch& batch, const Saved& saved, const Tensor& dlogits) const;

  // The pieces, for inference. src: int32 [B, S] → memory [B, S, D].
  Tensor encode(const Context& ctx, const Tensor& src, const Tensor& src_lengths, Saved* saved) const;
  // tgt_in: int32 [B, T] → hidden [B, T, D] (before the projection).
  Tensor decode(const Context& ctx, const Tensor& tgt_in, const Tensor& tgt_lengths, const Tensor& memory,
                const Tensor& src_lengths, Saved* saved) const;
  // hidden [..., D] → logits [..., V], through the (shared) target embedding: h · Eᵀ.
  Tensor project(const Context& ctx, const Tensor& hidden) const;

  const ModelConfig& config() const { return config_; }
  ParamStore& params() { return params_; }
  const ParamStore& params() const { return params_; }
  Context context(Rng* rng = nullptr) const { return Context{&params_, rng}; }

  int src_embedding = -1, tgt_embedding = -1;  // the same id when tied
  std::vector<EncoderLayer> encoder;
  std::vector<DecoderLayer> decoder;
  LayerNorm encoder_norm, decoder_norm;  // pre-LN only

 private:
  Tensor embed(const Context& ctx, int table, const Tensor& ids, int64_t start, EmbedSaved* saved) const;
  void embed_backward(const Context& ctx, int table, const EmbedSaved& saved, const Tensor& dx) const;

  ModelConfig config_;
  ParamStore params_;
};

}  // namespace tfm
