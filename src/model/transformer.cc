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
}  // namespace

EncoderLayer::EncoderLayer(ParamStore& params, const std::string& name, const ModelConfig& c)
    : self_attn(params, name + ".self_attn", c.d_model, c.heads, c.attention_dropout),
      ffn(params, name + ".ffn", c.d_model, c.d_ff, activation_of(c)),
      attn_res(params, name + ".self_attn_norm", c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout),
      ffn_res(params, name + ".ffn_norm", c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout) {}

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

DecoderLayer::DecoderLayer(ParamStore& params, const std::string& name, const ModelConfig& c)
    : self_attn(params, name + ".self_attn", c.d_model, c.heads, c.attention_dropout),
      cross_attn(params, name + ".cross_attn", c.d_model, c.heads, c.attention_dropout),
      ffn(params, name + ".ffn", c.d_model, c.d_ff, activation_of(c)),
      self_res(params, name + ".self_attn_norm", c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout),
      cross_res(params, name + ".cross_attn_norm", c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout),
      ffn_res(params, name + ".ffn_norm", c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout) {}

Tensor DecoderLayer::forward(const Context& ctx, const Tensor& x, const Tensor& memory, const AttentionMask& self_mask,
                             const AttentionMask& memory_mask, Saved* saved) const {
  Saved local;
  Saved& s = saved ? *saved : local;
  const Tensor h1 = self_res.forward(  // [B, T, D], as h2
      ctx, x,
      [&](const Tensor& in, const Tensor& r) { return self_attn.forward(ctx, in, in, self_mask, &s.self_attn, r); },
      &s.self_res);
  const Tensor h2 = cross_res.forward(
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
  const Tensor dh1 = cross_res.backward(ctx, s.cross_res, dh2, [&](const Tensor& dout, const Tensor& din) {
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
  if (c.tie_source_target) {
    src_embedding = tgt_embedding = params_.add("embed.weight", {c.vocab_size, c.d_model});
  } else {
    src_embedding = params_.add("encoder.embed.weight", {c.vocab_size, c.d_model});
    tgt_embedding = params_.add("decoder.embed.weight", {c.vocab_size, c.d_model});
  }
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    encoder_ids_.push_back({params_.size(), 0});
    encoder.emplace_back(params_, cat("encoder.layers.", i), c);
    encoder_ids_.back().end = params_.size();
  }
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    decoder_ids_.push_back({params_.size(), 0});
    decoder.emplace_back(params_, cat("decoder.layers.", i), c);
    decoder_ids_.back().end = params_.size();
  }
  if (c.pre_norm) {
    encoder_norm_ids_.first = params_.size();
    encoder_norm = LayerNorm(params_, "encoder.final_norm", c.d_model, c.layer_norm_eps);
    encoder_norm_ids_.end = decoder_norm_ids_.first = params_.size();
    decoder_norm = LayerNorm(params_, "decoder.final_norm", c.d_model, c.layer_norm_eps);
    decoder_norm_ids_.end = params_.size();
  }
  output_weight = c.tie_output ? tgt_embedding : params_.add("output.weight", {c.vocab_size, c.d_model});
  if (c.output_bias) output_bias = params_.add("output.bias", {c.vocab_size});
  params_.allocate(dtype);
}

void Transformer::init_parameters(uint64_t seed) {
  for (int id = 0; id < params_.size(); ++id) {
    const std::string& n = params_.name(id);
    const Tensor t = params_.value(id);  // the parameter's shape: [V, D], [out, in], [out] or [D]
    const RngStream rng{seed, static_cast<uint64_t>(id)};
    const bool is_bias = n.ends_with(".bias");
    const bool is_norm = n.find("norm.") != std::string::npos;
    if (id == src_embedding || id == tgt_embedding) init_normal(t, 1.0 / std::sqrt(double(config_.d_model)), rng);
    else if (is_norm && !is_bias) t.fill(1.0);
    else if (is_bias) t.zero();
    else init_xavier_uniform(t, rng);
  }
}

Tensor Transformer::embed(const Context& ctx, int table, const Tensor& ids, int64_t start, EmbedSaved* saved) const {
  check_rank("embed", "ids", ids, 2);
  const Tensor e = ctx.value(table);  // [V, D]
  Tensor x = Tensor::empty({ids.size(0), ids.size(1), config_.d_model}, e.dtype(), e.device());  // [B, L, D]
  ops::embedding(ids, e, embedding_scale(), x);         // E[ids] · √D (§3.4); id −1: zeros
  ops::add_positional_encoding(x, start, positions_);  // + PE (§3.5)
  EmbedSaved s{ids, {}, ctx.training() && config_.embedding_dropout > 0};
  if (s.dropped) {
    s.dropout = ctx.rng->next();
    ops::dropout(x, config_.embedding_dropout, s.dropout, x);
  }
  if (saved) *saved = s;
  return x;
}

void Transformer::embed_backward(const Context& ctx, int table, const EmbedSaved& s, const Tensor& dx) const {
  if (s.dropped) ops::dropout(dx, config_.embedding_dropout, s.dropout, dx);  // same mask, in place
  ops::embedding_backward(s.ids, dx, embedding_scale(), ctx.grad(table));
}

Tensor Transformer::encode(const Context& ctx, const Tensor& src, const Tensor& src_lengths, Saved* saved) const {
  const AttentionMask mask{.key_lengths = src_lengths};
  if (saved) saved->encoder.resize(encoder.size());
  Tensor x = embed(ctx, src_embedding, src, 0, saved ? &saved->src_embed : nullptr);  // [B, S, D]
  for (size_t i = 0; i < encoder.size(); ++i) x = encoder[i].forward(ctx, x, mask, saved ? &saved->encoder[i] : nullptr);
  if (config_.pre_norm) x = encoder_norm.forward(ctx, x, saved ? &saved->encoder_norm : nullptr);
  return x;
}

Tensor Transformer::decode(const Context& ctx, const Tensor& tgt_in, const Tensor& tgt_lengths, const Tensor& memory,
                           const Tensor& src_lengths, Saved* saved) const {
  const AttentionMask self_mask{.causal = true, .key_lengths = tgt_lengths}, memory_mask{.key_lengths = src_lengths};
  if (saved) saved->decoder.resize(decoder.size());
  Tensor x = embed(ctx, tgt_embedding, tgt_in, 0, saved ? &saved->tgt_embed : nullptr);  // [B, T, D]
  for (size_t i = 0; i < decoder.size(); ++i)
    x = decoder[i].forward(ctx, x, memory, self_mask, memory_mask, saved ? &saved->decoder[i] : nullptr);
  if (config_.pre_norm) x = decoder_norm.forward(ctx, x, saved ? &saved->decoder_norm : nullptr);
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
  const Tensor memory = encode(ctx, batch.src, batch.src_lengths, saved);  // [B, S, D]
  Tensor hidden = decode(ctx, batch.tgt_in, batch.tgt_lengths, memory, batch.src_lengths, saved);  // [B, T, D]
  if (saved) saved->hidden = hidden;
  return project(ctx, hidden);
}

std::vector<std::pair<int, int>> Transformer::grads_done_order() const {
  // As backward() below reports them (model_test checks that the two agree).
  std::vector<std::pair<int, int>> order;
  if (output_weight != tgt_embedding && output_weight != src_embedding) order.push_back({output_weight, output_weight + 1});
  if (output_bias >= 0) order.push_back({output_bias, output_bias + 1});
  if (config_.pre_norm) order.push_back({decoder_norm_ids_.first, decoder_norm_ids_.end});
  for (size_t i = decoder.size(); i-- > 0;) order.push_back({decoder_ids_[i].first, decoder_ids_[i].end});
  if (tgt_embedding != src_embedding) order.push_back({tgt_embedding, tgt_embedding + 1});
  if (config_.pre_norm) order.push_back({encoder_norm_ids_.first, encoder_norm_ids_.end});
  for (size_t i = encoder.size(); i-- > 0;) order.push_back({encoder_ids_[i].first, encoder_ids_[i].end});
  order.push_back({src_embedding, src_embedding + 1});
  return order;
}

void Transformer::backward(const Context& ctx, const Batch& batch, const Saved& s, const Tensor& dlogits) const {
  // Each layer's gradients are complete once its backward is done (ctx.grads_done), except the
  // embeddings', which the output projection and both embedding look-ups may share.
  const DType dt = dlogits.dtype();
  // Output projection: dE += dlogitsᵀ · h, dh = dlogits · E (E the target embedding when tied).
  const Device dev = dlogits.device();
  Tensor dx = Tensor::zeros(s.hidden.shape(), dt, dev);  // [B, T, D], then [B, S, D] for the encoder
  const Tensor de = ctx.grad(output_weight);               // [V, D]
  ops::product_backward(s.hidden, ctx.weight(output_weight), dlogits, {.dx = &dx, .dw = de});
  if (output_weight != tgt_embedding && output_weight != src_embedding) ctx.grads_done(output_weight, output_weight + 1);
  if (output_bias >= 0) {
    const int64_t V = config_.vocab_size;
    ops::bias_add_backward(dlogits.view({dlogits.numel() / V, V}), ctx.grad(output_bias));
    ctx.grads_done(output_bias, output_bias + 1);
  }
  if (config_.pre_norm) {
    Tensor d = Tensor::zeros(dx.shape(), dt, dev);  // [B, T, D]
    decoder_norm.backward(ctx, s.decoder_norm, dx, d);
    dx = d;
    ctx.grads_done(decoder_norm_ids_.first, decoder_norm_ids_.end);
  }
  Tensor dmemory = Tensor::zeros({batch.src.size(0), batch.src.size(1), config_.d_model}, dt, dev);  // [B, S, D]
  for (size_t i = decoder.size(); i-- > 0;) {
    dx = decoder[i].backward(ctx, s.decoder[i], dx, dmemory);
    ctx.grads_done(decoder_ids_[i].first, decoder_ids_[i].end);
  }
  embed_backward(ctx, tgt_embedding, s.tgt_embed, dx);
  if (tgt_embedding != src_embedding) ctx.grads_done(tgt_embedding, tgt_embedding + 1);

  dx = dmemory;
  if (config_.pre_norm) {
    Tensor d = Tensor::zeros(dx.shape(), dt, dev);  // [B, S, D]
    encoder_norm.backward(ctx, s.encoder_norm, dx, d);
    dx = d;
    ctx.grads_done(encoder_norm_ids_.first, encoder_norm_ids_.end);
  }
  for (size_t i = encoder.size(); i-- > 0;) {
    dx = encoder[i].backward(ctx, s.encoder[i], dx);
    ctx.grads_done(encoder_ids_[i].first, encoder_ids_[i].end);
  }
  embed_backward(ctx, src_embedding, s.src_embed, dx);
  ctx.grads_done(src_embedding, src_embedding + 1);
}

}  // namespace tfm
