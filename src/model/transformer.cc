#include "model/transformer.h"

#include <cmath>
#include <unordered_set>

#include "layers/init.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/positional.h"
#include "ops/product.h"

namespace tfm {

namespace {
ops::Activation activation_of(const ModelConfig& c) {
  ops::Activation a = ops::Activation::kRelu;
  TFM_CHECK(ops::parse_activation(c.activation, &a) && a != ops::Activation::kNone, "model: unknown activation '",
            c.activation, "'");
  return a;
}

ops::PositionEncoding positions_of(const ModelConfig& c) {
  using E = ops::PositionEncoding;
  return {c.positions == "sin_cos" ? E::Layout::kSinCos : E::Layout::kInterleaved,
          c.position_frequencies == "marian" ? E::Rates::kMarian : E::Rates::kPaper, c.position_offset};
}

// The rotary positions as configured: their shape, base and rate scaling.
ops::Rotary rotary_of(const ModelConfig& c) {
  using S = ops::RotaryScaling;
  const S scaling = c.rope_scaling == "linear" ? S::kLinear : c.rope_scaling == "llama3" ? S::kLlama3 : S::kNone;
  TFM_CHECK(scaling != S::kNone || c.rope_scaling == "none", "model: unknown rope_scaling '", c.rope_scaling, "'");
  return {c.rotary_dims > 0 ? c.rotary_dims : c.head_dim(), c.rope_theta, c.rope_interleaved, scaling,
          c.rope_scaling_factor, c.rope_low_freq_factor, c.rope_high_freq_factor,
          static_cast<double>(c.rope_original_max_positions)};
}

// A layer's self-attention: grouped-query heads, rotary positions and a window as configured
// (encoder-decoder attention has none of them).
MultiHeadAttention self_attention(ParamStore& params, const std::string& name, const ModelConfig& c) {
  AttentionVariant v{.kv_heads = c.kv_heads, .window = c.attention_window};
  if (c.positions == "rope") v.rope = rotary_of(c);
  return MultiHeadAttention(params, name, c.d_model, c.heads, c.attention_dropout, c.attention_bias, v);
}

FeedForward feed_forward(ParamStore& params, const std::string& name, const ModelConfig& c) {
  return FeedForward(params, name, c.d_model, c.d_ff, activation_of(c), c.ffn_bias, c.gated);
}

// A sub-layer's residual connection with its norm (`name`) of the configured kind.
Residual residual(ParamStore& params, const std::string& name, const ModelConfig& c) {
  return Residual(params, name, c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout, parse_norm_kind(c.norm));
}
}  // namespace

EncoderLayer::EncoderLayer(ParamStore& params, const std::string& name, const ModelConfig& c)
    : self_attn(self_attention(params, name + ".self_attn", c)),
      ffn(feed_forward(params, name + ".ffn", c)),
      attn_res(residual(params, name + ".self_attn_norm", c)),
      ffn_res(residual(params, name + ".ffn_norm", c)) {}

Tensor EncoderLayer::forward(const Context& ctx, const Tensor& x, const AttentionMask& mask, Saved* saved) const {
  Saved local;
  Saved& s = saved ? *saved : local;
  const Tensor h = attn_res.forward(  // [B, S, D]
      ctx, x, [&](const Tensor& in, const Tensor& r) { return self_attn.forward(ctx, in, in, mask, &s.attn, r); },
      &s.attn_res);
  return ffn_res.forward(
      ctx, h, [&](const Tensor& in, const Tensor& r) { return ffn.forward(ctx, in, &s.ffn, r); }, &s.ffn_res);
}

Tensor EncoderLayer::backward(const Context& ctx, const Saved& s, const Tensor& dy) const {
  const Tensor dh = ffn_res.backward(  // [B, S, D]
      ctx, s.ffn_res, dy, [&](const Tensor& dout, const Tensor& din) { ffn.backward(ctx, s.ffn, dout, din); });
  return attn_res.backward(ctx, s.attn_res, dh, [&](const Tensor& dout, const Tensor& din) {
    self_attn.backward(ctx, s.attn, dout, din, din);
  });
}

// Registered in the order self-attention, cross-attention, feed-forward, then the norms: as before
// for encoder-decoder models (their parameter ids and files unchanged).
DecoderLayer::DecoderLayer(ParamStore& params, const std::string& name, const ModelConfig& c)
    : cross(c.has_encoder()),
      self_attn(self_attention(params, name + ".self_attn", c)),
      cross_attn(cross ? MultiHeadAttention(params, name + ".cross_attn", c.d_model, c.heads, c.attention_dropout,
                                            c.attention_bias)
                       : MultiHeadAttention()),
      ffn(feed_forward(params, name + ".ffn", c)),
      self_res(residual(params, name + ".self_attn_norm", c)),
      cross_res(cross ? residual(params, name + ".cross_attn_norm", c) : Residual()),
      ffn_res(residual(params, name + ".ffn_norm", c)) {}

Tensor DecoderLayer::forward(const Context& ctx, const Tensor& x, const Tensor& memory, const AttentionMask& self_mask,
                             const AttentionMask& memory_mask, Saved* saved) const {
  Saved local;
  Saved& s = saved ? *saved : local;
  const Tensor h1 = self_res.forward(  // [B, T, D], as h2
      ctx, x,
      [&](const Tensor& in, const Tensor& r) { return self_attn.forward(ctx, in, in, self_mask, &s.self_attn, r); },
      &s.self_res);
  const Tensor h2 = !cross ? h1
                           : cross_res.forward(
                                 ctx, h1,
                                 [&](const Tensor& in, const Tensor& r) {
                                   return cross_attn.forward(ctx, in, memory, memory_mask, &s.cross_attn, r);
                                 },
                                 &s.cross_res);
  return ffn_res.forward(
      ctx, h2, [&](const Tensor& in, const Tensor& r) { return ffn.forward(ctx, in, &s.ffn, r); }, &s.ffn_res);
}

Tensor DecoderLayer::backward(const Context& ctx, const Saved& s, const Tensor& dy, const Tensor& dmemory) const {
  const Tensor dh2 = ffn_res.backward(  // [B, T, D], as dh1
      ctx, s.ffn_res, dy, [&](const Tensor& dout, const Tensor& din) { ffn.backward(ctx, s.ffn, dout, din); });
  const Tensor dh1 = !cross ? dh2 : cross_res.backward(ctx, s.cross_res, dh2, [&](const Tensor& dout, const Tensor& din) {
    cross_attn.backward(ctx, s.cross_attn, dout, din, dmemory);
  });
  return self_res.backward(ctx, s.self_res, dh1, [&](const Tensor& dout, const Tensor& din) {
    self_attn.backward(ctx, s.self_attn, dout, din, din);
  });
}

Transformer::Transformer(const ModelConfig& config, DType dtype) : config_(config) {
  config_.validate();
  positions_ = positions_of(config_);
  const ModelConfig& c = config_;
  if (c.tie_source_target || !c.has_encoder() || !c.has_decoder()) {
    src_embedding = tgt_embedding = params_.add("embed.weight", {c.vocab_size, c.d_model});
  } else {
    src_embedding = params_.add("encoder.embed.weight", {c.vocab_size, c.d_model});
    tgt_embedding = params_.add("decoder.embed.weight", {c.vocab_size, c.d_model});
  }
  add_embedding_extras();
  add_stacks();
  if (c.mlm_head) {
    mlm_ids_.first = params_.size();
    mlm_dense = Linear(params_, "mlm_head.dense", c.d_model, c.d_model);
    mlm_norm = LayerNorm(params_, "mlm_head.norm", c.d_model, c.layer_norm_eps, parse_norm_kind(c.norm));
    mlm_ids_.end = params_.size();
  }
  output_weight = c.tie_output ? tgt_embedding : params_.add("output.weight", {c.vocab_size, c.d_model});
  if (c.output_bias) output_bias = params_.add("output.bias", {c.vocab_size});
  params_.allocate(dtype);
}

void Transformer::add_stacks() {
  const ModelConfig& c = config_;
  for (int64_t i = 0; c.has_encoder() && i < c.encoder_layers; ++i) {
    encoder_ids_.push_back({params_.size(), 0});
    encoder.emplace_back(params_, cat("encoder.layers.", i), c);
    encoder_ids_.back().end = params_.size();
  }
  for (int64_t i = 0; c.has_decoder() && i < c.decoder_layers; ++i) {
    decoder_ids_.push_back({params_.size(), 0});
    decoder.emplace_back(params_, cat("decoder.layers.", i), c);
    decoder_ids_.back().end = params_.size();
  }
  if (!final_norms()) return;
  encoder_norm_ids_.first = params_.size();
  const NormKind kind = parse_norm_kind(c.norm);
  if (c.has_encoder()) encoder_norm = LayerNorm(params_, "encoder.final_norm", c.d_model, c.layer_norm_eps, kind);
  encoder_norm_ids_.end = decoder_norm_ids_.first = params_.size();
  if (c.has_decoder()) decoder_norm = LayerNorm(params_, "decoder.final_norm", c.d_model, c.layer_norm_eps, kind);
  decoder_norm_ids_.end = params_.size();
}

void Transformer::init_parameters(uint64_t seed) {
  for (int id = 0; id < params_.size(); ++id) {
    const std::string& n = params_.name(id);
    const Tensor t = params_.value(id);  // the parameter's shape: [V, D], [out, in], [out] or [D]
    const RngStream rng{seed, static_cast<uint64_t>(id)};
    const bool is_bias = n.ends_with(".bias");
    const bool is_norm = n.find("norm.") != std::string::npos;
    const bool table = id == src_embedding || id == tgt_embedding || id == positions_table || id == token_type_table;
    if (table) init_normal(t, 1.0 / std::sqrt(double(config_.d_model)), rng);
    else if (is_norm && !is_bias) t.fill(1.0);
    else if (is_bias) t.zero();
    else init_xavier_uniform(t, rng);
  }
}

Tensor Transformer::encode(const Context& ctx, const Tensor& src, const Tensor& src_lengths, Saved* saved,
                           const Tensor& token_types) const {
  TFM_CHECK(config_.has_encoder(), "encode: the model is ", config_.architecture, ": it has no encoder");
  const AttentionMask mask{.key_lengths = src_lengths};
  if (saved) saved->encoder.resize(encoder.size());
  Tensor x = embed(ctx, src_embedding, src, 0, saved ? &saved->src_embed : nullptr, token_types);  // [B, S, D]
  for (size_t i = 0; i < encoder.size(); ++i) x = encoder[i].forward(ctx, x, mask, saved ? &saved->encoder[i] : nullptr);
  if (final_norms()) x = encoder_norm.forward(ctx, x, saved ? &saved->encoder_norm : nullptr);
  return x;
}

Tensor Transformer::decode(const Context& ctx, const Tensor& tgt_in, const Tensor& tgt_lengths, const Tensor& memory,
                           const Tensor& src_lengths, Saved* saved) const {
  TFM_CHECK(config_.has_decoder(), "decode: the model is ", config_.architecture, ": it has no decoder");
  const AttentionMask self_mask{.causal = true, .key_lengths = tgt_lengths}, memory_mask{.key_lengths = src_lengths};
  if (saved) saved->decoder.resize(decoder.size());
  Tensor x = embed(ctx, tgt_embedding, tgt_in, 0, saved ? &saved->tgt_embed : nullptr);  // [B, T, D]
  for (size_t i = 0; i < decoder.size(); ++i)
    x = decoder[i].forward(ctx, x, memory, self_mask, memory_mask, saved ? &saved->decoder[i] : nullptr);
  if (final_norms()) x = decoder_norm.forward(ctx, x, saved ? &saved->decoder_norm : nullptr);
  return x;
}

Tensor Transformer::project(const Context& ctx, const Tensor& hidden) const {
  // h · Eᵀ (§3.4), + b with a logits bias
  Tensor logits = ops::product(hidden, ctx.weight(output_weight));  // [..., V]
  if (output_bias >= 0) add_output_bias(logits, ctx.value(output_bias));
  return logits;
}

void Transformer::add_output_bias(const Tensor& logits, const Tensor& bias) {
  const int64_t V = bias.numel();
  const Tensor flat = logits.view({logits.numel() / V, V});  // [N, V] (V' of a shortlist)
  ops::bias_add(flat, bias, flat);
}

Tensor Transformer::forward(const Context& ctx, const Batch& batch, Saved* saved) const {
  Tensor hidden;  // the projection's input: [B, T, D] ([B, S, D] encoder-only)
  if (!config_.has_decoder()) {
    hidden = encode(ctx, batch.src, batch.src_lengths, saved, batch.token_types);
    if (config_.mlm_head) hidden = mlm_forward(ctx, hidden, saved ? &saved->mlm : nullptr);
  } else {
    // The encoder's output, which only the decoder's cross-attention products read: in bf16 training
    // rounded once here for every decoder layer (Context::product_input)
    const Tensor memory =
        config_.has_encoder() ? ctx.product_input(encode(ctx, batch.src, batch.src_lengths, saved)) : Tensor();
    hidden = decode(ctx, batch.tgt_in, batch.tgt_lengths, memory, batch.src_lengths, saved);
  }
  hidden = ctx.product_input(hidden);  // what the output projection reads, and its backward
  if (saved) saved->hidden = hidden;
  return project(ctx, hidden);
}

Tensor Transformer::mlm_forward(const Context& ctx, const Tensor& hidden_in, MlmSaved* saved) const {
  const Tensor hidden = ctx.product_input(hidden_in);  // what the dense layer reads, and its backward
  const ops::Activation act = activation_of(config_);
  const bool keep_pre = saved != nullptr && ctx.weight(mlm_dense.weight).differentiable();
  Tensor pre = mlm_dense.forward(ctx, hidden, keep_pre ? ops::Activation::kNone : act);  // [B, S, D]
  Tensor h = pre;
  if (keep_pre) {
    h = Tensor::empty(pre.shape(), pre.dtype(), pre.device());
    ops::activate(act, pre, h);
  }
  if (saved) saved->x = hidden, saved->pre = pre;
  return mlm_norm.forward(ctx, h, saved ? &saved->norm : nullptr);
}

Tensor Transformer::mlm_backward(const Context& ctx, const MlmSaved& s, const Tensor& dy) const {
  Tensor dh = Tensor::zeros(dy.shape(), dy.dtype(), dy.device());  // [B, S, D], as dpre and dx
  mlm_norm.backward(ctx, s.norm, dy, dh);
  Tensor dpre = Tensor::zeros(dy.shape(), dy.dtype(), dy.device());
  ops::activation_backward(activation_of(config_), s.pre, dh, dpre);
  Tensor dx = Tensor::zeros(dy.shape(), dy.dtype(), dy.device());
  mlm_dense.backward(ctx, s.x, dpre, &dx);
  return dx;
}

std::vector<std::pair<int, int>> Transformer::grads_done_order() const {
  // As backward() below reports them (model_test checks that the two agree).
  std::vector<std::pair<int, int>> order;
  const bool both = config_.has_encoder() && config_.has_decoder();
  if (output_weight != tgt_embedding) order.push_back({output_weight, output_weight + 1});
  if (output_bias >= 0) order.push_back({output_bias, output_bias + 1});
  if (config_.mlm_head) order.push_back({mlm_ids_.first, mlm_ids_.end});
  if (config_.has_decoder()) {
    if (final_norms()) order.push_back({decoder_norm_ids_.first, decoder_norm_ids_.end});
    for (size_t i = decoder.size(); i-- > 0;) order.push_back({decoder_ids_[i].first, decoder_ids_[i].end});
  }
  if (both && tgt_embedding != src_embedding) order.push_back({tgt_embedding, tgt_embedding + 1});
  if (config_.has_encoder()) {
    if (final_norms()) order.push_back({encoder_norm_ids_.first, encoder_norm_ids_.end});
    for (size_t i = encoder.size(); i-- > 0;) order.push_back({encoder_ids_[i].first, encoder_ids_[i].end});
  }
  order.push_back({src_embedding, src_embedding + 1});
  if (embed_extra_ids_.end > embed_extra_ids_.first) order.push_back({embed_extra_ids_.first, embed_extra_ids_.end});
  return order;
}

// Each layer's gradients are complete once its backward is done (ctx.grads_done), except the
// embeddings', which the output projection and both embedding look-ups may share.
void Transformer::backward(const Context& ctx, const Batch& batch, const Saved& s, const Tensor& dlogits) const {
  // dlogits may be bfloat16 (bf16 training: what the output projection's backward reads); the
  // gradients it makes are float32.
  const DType dt = dlogits.dtype() == DType::BF16 ? DType::F32 : dlogits.dtype();
  TFM_CHECK(dlogits.dtype() != DType::BF16 || output_bias < 0,
            "Transformer::backward: a logits bias's gradient is summed from float32 dlogits, not bfloat16 ones");
  // Output projection: dE += dlogitsᵀ · h, dh = dlogits · E (E the target embedding when tied).
  const Device dev = dlogits.device();
  Tensor dx = Tensor::zeros(s.hidden.shape(), dt, dev);  // [B, T, D] ([B, S, D] encoder-only)
  ops::product_backward(s.hidden, ctx.weight(output_weight), dlogits, {.dx = &dx, .dw = ctx.grad(output_weight)});
  if (output_weight != tgt_embedding) ctx.grads_done(output_weight, output_weight + 1);
  if (output_bias >= 0) {
    const int64_t V = config_.vocab_size;
    ops::bias_add_backward(dlogits.view({dlogits.numel() / V, V}), ctx.grad(output_bias));
    ctx.grads_done(output_bias, output_bias + 1);
  }
  if (config_.mlm_head) {
    dx = mlm_backward(ctx, s.mlm, dx);
    ctx.grads_done(mlm_ids_.first, mlm_ids_.end);
  }
  if (config_.has_decoder()) {
    const bool both = config_.has_encoder();
    // [B, S, D]: what reaches the encoder's output
    const Tensor dmemory =
        both ? Tensor::zeros({batch.src.size(0), batch.src.size(1), config_.d_model}, dt, dev) : Tensor();
    embed_backward(ctx, tgt_embedding, s.tgt_embed, decoder_backward(ctx, s, dx, dmemory));
    if (both && tgt_embedding != src_embedding) ctx.grads_done(tgt_embedding, tgt_embedding + 1);
    dx = dmemory;
  }
  if (config_.has_encoder()) embed_backward(ctx, src_embedding, s.src_embed, encoder_backward(ctx, s, dx));
  ctx.grads_done(src_embedding, src_embedding + 1);
  if (embed_extra_ids_.end > embed_extra_ids_.first) ctx.grads_done(embed_extra_ids_.first, embed_extra_ids_.end);
}

Tensor Transformer::decoder_backward(const Context& ctx, const Saved& s, Tensor dx, const Tensor& dmemory) const {
  if (final_norms()) {
    Tensor d = Tensor::zeros(dx.shape(), dx.dtype(), dx.device());  // [B, T, D]
    decoder_norm.backward(ctx, s.decoder_norm, dx, d);
    dx = d;
    ctx.grads_done(decoder_norm_ids_.first, decoder_norm_ids_.end);
  }
  for (size_t i = decoder.size(); i-- > 0;) {
    dx = decoder[i].backward(ctx, s.decoder[i], dx, dmemory);
    ctx.grads_done(decoder_ids_[i].first, decoder_ids_[i].end);
  }
  return dx;
}

Tensor Transformer::encoder_backward(const Context& ctx, const Saved& s, Tensor dx) const {
  if (final_norms()) {
    Tensor d = Tensor::zeros(dx.shape(), dx.dtype(), dx.device());  // [B, S, D]
    encoder_norm.backward(ctx, s.encoder_norm, dx, d);
    dx = d;
    ctx.grads_done(encoder_norm_ids_.first, encoder_norm_ids_.end);
  }
  for (size_t i = encoder.size(); i-- > 0;) {
    dx = encoder[i].backward(ctx, s.encoder[i], dx);
    ctx.grads_done(encoder_ids_[i].first, encoder_ids_[i].end);
  }
  return dx;
}

}  // namespace tfm
