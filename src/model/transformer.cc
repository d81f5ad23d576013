#include "model/transformer.h"

#include <cmath>
#include <unordered_set>

#include "layers/init.h"
#include "ops/copy.h"
#include "ops/elementwise.h"
#include "ops/int8.h"
#include "ops/packed.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/positional.h"

namespace tfm {

EncoderLayer::EncoderLayer(ParamStore& params, const std::string& name, const ModelConfig& c)
    : self_attn(params, name + ".self_attn", c.d_model, c.heads, c.attention_dropout),
      ffn(params, name + ".ffn", c.d_model, c.d_ff),
      attn_res(params, name + ".self_attn_norm", c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout),
      ffn_res(params, name + ".ffn_norm", c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout) {}

Tensor EncoderLayer::forward(const Context& ctx, const Tensor& x, const AttentionMask& mask, Saved* saved) const {
  Saved local;
  Saved& s = saved ? *saved : local;
  const Tensor h = attn_res.forward(
      ctx, x, [&](const Tensor& in) { return self_attn.forward(ctx, in, in, mask, &s.attn); }, &s.attn_res);
  return ffn_res.forward(ctx, h, [&](const Tensor& in) { return ffn.forward(ctx, in, &s.ffn); }, &s.ffn_res);
}

Tensor EncoderLayer::backward(const Context& ctx, const Saved& s, const Tensor& dy) const {
  const Tensor dh = ffn_res.backward(
      ctx, s.ffn_res, dy, [&](const Tensor& dout, const Tensor& din) { ffn.backward(ctx, s.ffn, dout, din); });
  return attn_res.backward(ctx, s.attn_res, dh, [&](const Tensor& dout, const Tensor& din) {
    self_attn.backward(ctx, s.attn, dout, din, din);
  });
}

DecoderLayer::DecoderLayer(ParamStore& params, const std::string& name, const ModelConfig& c)
    : self_attn(params, name + ".self_attn", c.d_model, c.heads, c.attention_dropout),
      cross_attn(params, name + ".cross_attn", c.d_model, c.heads, c.attention_dropout),
      ffn(params, name + ".ffn", c.d_model, c.d_ff),
      self_res(params, name + ".self_attn_norm", c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout),
      cross_res(params, name + ".cross_attn_norm", c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout),
      ffn_res(params, name + ".ffn_norm", c.d_model, c.layer_norm_eps, c.pre_norm, c.dropout) {}

Tensor DecoderLayer::forward(const Context& ctx, const Tensor& x, const Tensor& memory, const AttentionMask& self_mask,
                             const AttentionMask& memory_mask, Saved* saved) const {
  Saved local;
  Saved& s = saved ? *saved : local;
  const Tensor h1 = self_res.forward(
      ctx, x, [&](const Tensor& in) { return self_attn.forward(ctx, in, in, self_mask, &s.self_attn); },
      &s.self_res);
  const Tensor h2 = cross_res.forward(
      ctx, h1, [&](const Tensor& in) { return cross_attn.forward(ctx, in, memory, memory_mask, &s.cross_attn); },
      &s.cross_res);
  return ffn_res.forward(ctx, h2, [&](const Tensor& in) { return ffn.forward(ctx, in, &s.ffn); }, &s.ffn_res);
}

Tensor DecoderLayer::step(const Context& ctx, const Tensor& x, DecodeState& state, size_t index) const {
  const Tensor h1 = self_res.forward(
      ctx, x,
      [&](const Tensor& in) {
        const auto [q, k, v] = self_attn.project_qkv(ctx, in);
        ops::write_position(state.self_k[index], k, state.length);
        ops::write_position(state.self_v[index], v, state.length);
        return self_attn.attend_projected(ctx, in, q, state.self_k[index], state.self_v[index],
                                          {.key_lengths = state.step_lengths, .key_rows = state.key_rows}, nullptr);
      },
      nullptr);
  const Tensor h2 = cross_res.forward(
      ctx, h1,
      [&](const Tensor& in) {
        MultiHeadAttention::Saved saved;
        Tensor y = cross_attn.attend(ctx, in, state.memory_k[index], state.memory_v[index],
                                     {.key_lengths = state.src_lengths, .kv_group = state.kv_group},
                                     state.record_attention ? &saved : nullptr);
        if (state.record_attention) state.cross_attention[index] = saved.probs;
        return y;
      },
      nullptr);
  return ffn_res.forward(ctx, h2, [&](const Tensor& in) { return ffn.forward(ctx, in, nullptr); }, nullptr);
}

Tensor DecoderLayer::backward(const Context& ctx, const Saved& s, const Tensor& dy, const Tensor& dmemory) const {
  const Tensor dh2 = ffn_res.backward(
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
  const ModelConfig& c = config_;
  if (c.tie_source_target) {
    src_embedding = tgt_embedding = params_.add("embed.weight", {c.vocab_size, c.d_model});
  } else {
    src_embedding = params_.add("encoder.embed.weight", {c.vocab_size, c.d_model});
    tgt_embedding = params_.add("decoder.embed.weight", {c.vocab_size, c.d_model});
  }
  for (int64_t i = 0; i < c.encoder_layers; ++i) encoder.emplace_back(params_, cat("encoder.layers.", i), c);
  for (int64_t i = 0; i < c.decoder_layers; ++i) decoder.emplace_back(params_, cat("decoder.layers.", i), c);
  if (c.pre_norm) {
    encoder_norm = LayerNorm(params_, "encoder.final_norm", c.d_model, c.layer_norm_eps);
    decoder_norm = LayerNorm(params_, "decoder.final_norm", c.d_model, c.layer_norm_eps);
  }
  params_.allocate(dtype);
}

void Transformer::init_parameters(uint64_t seed) {
  for (int id = 0; id < params_.size(); ++id) {
    const std::string& n = params_.name(id);
    const Tensor t = params_.value(id);
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
  const Tensor e = ctx.value(table);
  Tensor x = Tensor::empty({ids.size(0), ids.size(1), config_.d_model}, e.dtype(), e.device());
  ops::embedding(ids, e, std::sqrt(double(config_.d_model)), x);  // E[ids] · √D (§3.4)
  ops::add_positional_encoding(x, start);                          // + PE (§3.5)
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
  ops::embedding_backward(s.ids, dx, std::sqrt(double(config_.d_model)), ctx.grad(table));
}

Tensor Transformer::encode(const Context& ctx, const Tensor& src, const Tensor& src_lengths, Saved* saved) const {
  const AttentionMask mask{.key_lengths = src_lengths};
  if (saved) saved->encoder.resize(encoder.size());
  Tensor x = embed(ctx, src_embedding, src, 0, saved ? &saved->src_embed : nullptr);
  for (size_t i = 0; i < encoder.size(); ++i) x = encoder[i].forward(ctx, x, mask, saved ? &saved->encoder[i] : nullptr);
  if (config_.pre_norm) x = encoder_norm.forward(ctx, x, saved ? &saved->encoder_norm : nullptr);
  return x;
}

Tensor Transformer::decode(const Context& ctx, const Tensor& tgt_in, const Tensor& tgt_lengths, const Tensor& memory,
                           const Tensor& src_lengths, Saved* saved) const {
  const AttentionMask self_mask{.causal = true, .key_lengths = tgt_lengths}, memory_mask{.key_lengths = src_lengths};
  if (saved) saved->decoder.resize(decoder.size());
  Tensor x = embed(ctx, tgt_embedding, tgt_in, 0, saved ? &saved->tgt_embed : nullptr);
  for (size_t i = 0; i < decoder.size(); ++i)
    x = decoder[i].forward(ctx, x, memory, self_mask, memory_mask, saved ? &saved->decoder[i] : nullptr);
  if (config_.pre_norm) x = decoder_norm.forward(ctx, x, saved ? &saved->decoder_norm : nullptr);
  return x;
}

Tensor Transformer::project(const Context& ctx, const Tensor& hidden) const {
  // h · Eᵀ (§3.4)
  return project_onto(hidden, ctx.value(tgt_embedding), ctx.int8_weight(tgt_embedding),
                      ctx.packed_weight(tgt_embedding), ctx.products);
}

Tensor Transformer::project_onto(const Tensor& hidden, const Tensor& w, const ops::QuantizedMatrix* q,
                                 const ops::PackedMatrix* p, ops::Precision precision) {
  std::vector<int64_t> dims = hidden.shape().to_vector();
  dims.back() = w.size(0);
  Tensor logits = Tensor::empty(Shape(dims), hidden.dtype(), hidden.device());
  if (q) ops::matmul_int8(hidden, *q, logits);
  else if (p) ops::matmul_packed(hidden, *p, logits);
  else ops::matmul(hidden, w, logits, {.trans_b = true, .precision = precision});
  return logits;
}

void Transformer::restrict_output(const Context& ctx, DecodeState& state, const std::vector<int32_t>& ids) const {
  TFM_CHECK(!ids.empty(), "restrict_output: an empty output vocabulary");
  for (size_t j = 0; j < ids.size(); ++j)
    TFM_CHECK(ids[j] >= 0 && ids[j] < config_.vocab_size && (j == 0 || ids[j] > ids[j - 1]),
              "restrict_output: ids must be sorted, unique and in [0, ", config_.vocab_size, "); got ", ids[j],
              " at position ", j);
  const int64_t n = static_cast<int64_t>(ids.size());
  state.output_ids = Tensor::from<int32_t>({n}, ids);
  state.output_weight = Tensor();
  state.output_int8.reset();
  state.output_packed.reset();
  // The same kind of product as the full projection would use: int8 rows (quantized per row, so
  // the selected rows of the full matrix), or E[ids] [V', D] in float32, packed anew for each batch
  // when the full projection is packed (a copy of V' rows, small beside a batch's decoding).
  if (const ops::QuantizedMatrix* q = ctx.int8_weight(tgt_embedding)) {
    ops::QuantizedMatrix rows{Tensor::empty({n, config_.d_model}, DType::I8), Tensor::empty({n}), Tensor()};
    ops::index_select(q->q, state.output_ids, rows.q);
    ops::index_select(q->scale, state.output_ids, rows.scale);
    state.output_int8 = std::make_shared<const ops::QuantizedMatrix>(std::move(rows));
    return;
  }
  const Tensor e = ctx.value(tgt_embedding);
  state.output_weight = Tensor::empty({n, config_.d_model}, e.dtype(), e.device());
  ops::index_select(e, state.output_ids, state.output_weight);
  if (ctx.packed_weight(tgt_embedding))
    state.output_packed = std::make_shared<const ops::PackedMatrix>(ops::pack_weight(state.output_weight));
}

bool Transformer::is_product_weight(int id) const {
  if (id == tgt_embedding) return true;  // the output projection (its lookups stay float32)
  return params_.shape(id).rank() == 2 && params_.name(id).ends_with(".weight") && id != src_embedding;
}

bool Transformer::only_in_products(int id) const { return is_product_weight(id) && id != tgt_embedding; }

std::vector<int> Transformer::product_weights() const {
  std::vector<int> ids;
  for (int id = 0; id < params_.size(); ++id)
    if (only_in_products(id)) ids.push_back(id);
  ids.push_back(tgt_embedding);  // last: while the others' copies are made, their plain values can go
  return ids;
}

std::pair<Tensor, Tensor> Transformer::fused_qkv(const MultiHeadAttention& a) const {
  const int64_t D = a.q_proj.out;
  Tensor w = Tensor::empty({3 * D, a.q_proj.in}), b = Tensor::empty({3 * D});  // [3D, D], [3D]
  int64_t row = 0;
  for (const Linear* l : {&a.q_proj, &a.k_proj, &a.v_proj}) {
    w.rows(row, D).copy_from(params_.value(l->weight));
    b.rows(row, D).copy_from(params_.value(l->bias));
    row += D;
  }
  return {w, b};
}

void Transformer::release_fused_parts(const MultiHeadAttention& a, PlainWeights plain) {
  if (plain == PlainWeights::kRelease)
    for (const Linear* l : {&a.q_proj, &a.k_proj, &a.v_proj}) params_.release(l->weight);
}

void Transformer::check_not_released(const char* what) const {
  TFM_CHECK(params_.released_count() == 0, what, ": ", params_.released_count(),
            " weights were already given back by an earlier pack_weights or quantize_int8 (PlainWeights::kRelease)");
}

void Transformer::quantize_int8(PlainWeights plain) {
  TFM_CHECK(params_.dtype() == DType::F32, "int8 quantization needs a float32 model");
  check_not_released("quantize_int8");
  int8_.clear();
  // Packed copies may still refer to the plain weights for some products: none may outlive them.
  if (plain == PlainWeights::kRelease) packed_.clear();
  for (const DecoderLayer& l : decoder) {
    auto [w, b] = fused_qkv(l.self_attn);
    ops::QuantizedMatrix q = ops::quantize_rows(w);  // per row: the same as each layer's own
    q.bias = b;
    int8_.emplace(fused_key(l.self_attn.q_proj.weight), std::move(q));
    release_fused_parts(l.self_attn, plain);
  }
  for (int id : product_weights()) {
    if (params_.released(id)) continue;  // a fused copy's part, kept only there
    int8_.emplace(id, ops::quantize_rows(params_.value(id)));
    if (plain == PlainWeights::kRelease && only_in_products(id)) params_.release(id);
  }
}

void Transformer::pack_weights(PlainWeights plain) {
  TFM_CHECK(params_.dtype() == DType::F32, "packed weights need a float32 model");
  check_not_released("pack_weights");
  packed_.clear();
  std::unordered_set<int> relu;  // the feed-forward layers' first products take their ReLU with them
  for (const EncoderLayer& l : encoder) relu.insert(l.ffn.fc1.weight);
  for (const DecoderLayer& l : decoder) relu.insert(l.ffn.fc1.weight);
  for (const DecoderLayer& l : decoder) {
    auto [w, b] = fused_qkv(l.self_attn);
    ops::PackedMatrix p = ops::pack_weight(w, b);  // p.bias keeps b
    if (p.packed) p.weight = Tensor();  // every product takes the packed copy; w need not stay
    packed_.emplace(fused_key(l.self_attn.q_proj.weight), std::move(p));
    release_fused_parts(l.self_attn, plain);
  }
  for (int id : product_weights()) {
    if (params_.released(id)) continue;  // a fused copy's part, kept only there
    // A linear layer's bias joins its product (`<name>.weight` → `<name>.bias`); the output
    // projection has none.
    const std::string& name = params_.name(id);
    const int bias = id == tgt_embedding ? -1 : params_.find(name.substr(0, name.size() - 6) + "bias");
    ops::PackedMatrix p =
        ops::pack_weight(params_.value(id), bias >= 0 ? params_.value(bias) : Tensor(),
                         bias >= 0 && relu.count(id) ? ops::Activation::kRelu : ops::Activation::kNone);
    if (plain == PlainWeights::kRelease && only_in_products(id) && p.packed) {
      p.weight = Tensor();  // no product may fall back to it
      params_.release(id);
    }
    packed_.emplace(id, std::move(p));
  }
}

DecodeState Transformer::start_decoding(const Context& ctx, const Tensor& memory, const Tensor& src_lengths,
                                        int64_t max_length, bool record_attention, int64_t hypotheses) const {
  TFM_CHECK(max_length >= 1, "decoding needs a maximum length of at least 1, got ", max_length);
  TFM_CHECK(hypotheses >= 1, "decoding needs at least 1 hypothesis per sentence, got ", hypotheses);
  DecodeState state;
  state.src_lengths = src_lengths.clone();
  state.record_attention = record_attention;
  const int64_t B = memory.size(0);
  for (const DecoderLayer& layer : decoder) {
    const auto [k, v] = layer.cross_attn.project_kv(ctx, memory);
    state.memory_k.push_back(k);
    state.memory_v.push_back(v);
    state.self_k.push_back(Tensor::zeros({max_length, B * hypotheses, config_.d_model}, memory.dtype(), memory.device()));
    state.self_v.push_back(Tensor::zeros({max_length, B * hypotheses, config_.d_model}, memory.dtype(), memory.device()));
  }
  state.key_rows = Tensor::zeros({B, max_length}, DType::I32);
  state.cross_attention.resize(decoder.size());
  state.step_lengths = Tensor::zeros({B}, DType::I32);
  return state;
}

Tensor Transformer::decode_step(const Context& ctx, DecodeState& state, const Tensor& tokens) const {
  const int64_t rows = state.rows();
  TFM_CHECK(tokens.numel() == rows, "decode_step: ", tokens.numel(), " tokens for ", rows, " hypotheses");
  TFM_CHECK(state.key_rows.size(1) > state.length, "decode_step: the cache holds ", state.length,
            " tokens, its capacity");
  state.step_lengths.fill(static_cast<double>(state.length + 1));
  // This step's keys go to row b of the slab, which hypothesis b reads from now on.
  int32_t* key_rows = state.key_rows.data<int32_t>();
  for (int64_t b = 0; b < rows; ++b) key_rows[b * state.key_rows.size(1) + state.length] = static_cast<int32_t>(b);
  Tensor x = embed(ctx, tgt_embedding, tokens.view({rows, 1}), state.length, nullptr);
  for (size_t i = 0; i < decoder.size(); ++i) x = decoder[i].step(ctx, x, state, i);
  if (config_.pre_norm) x = decoder_norm.forward(ctx, x, nullptr);
  ++state.length;
  if (!state.output_ids.defined()) return project(ctx, x).view({rows, config_.vocab_size});
  // project_onto reads only the row count of its weight argument when given the int8 rows.
  const Tensor& w = state.output_int8 ? state.output_int8->q : state.output_weight;
  return project_onto(x, w, state.output_int8.get(), state.output_packed.get(), ctx.products).view({rows, state.output_ids.numel()});
}

void Transformer::reorder(DecodeState& state, const Tensor& rows, const Tensor& memory_rows) const {
  auto select = [](Tensor& t, const Tensor& which, int64_t prefix) {
    std::vector<int64_t> dims = t.shape().to_vector();
    dims[0] = which.numel();
    Tensor out = Tensor::empty(Shape(dims), t.dtype(), t.device());
    ops::index_select(t, which, out, prefix);
    t = out;
  };
  TFM_CHECK(state.self_k.empty() || rows.numel() <= state.self_k[0].size(1), "reorder: ", rows.numel(),
            " hypotheses exceed the ", state.self_k[0].size(1),
            " rows of the decoding cache's slabs (sentences × start_decoding's hypotheses per sentence)");
  select(state.src_lengths, rows, -1);
  select(state.step_lengths, rows, -1);
  select(state.key_rows, rows, -1);  // the caches' keys and values stay where they are
  for (Tensor& t : state.cross_attention)
    if (t.defined()) select(t, rows, -1);
  if (memory_rows.defined())
    for (auto* memory : {&state.memory_k, &state.memory_v})
      for (Tensor& t : *memory) select(t, memory_rows, -1);
  const int64_t entries = state.memory_k.empty() ? rows.numel() : state.memory_k[0].size(0);
  TFM_CHECK(entries > 0 && rows.numel() % entries == 0, "reorder: ", rows.numel(), " hypotheses cannot share ",
            entries, " encoder outputs evenly");
  state.kv_group = rows.numel() / entries;
}

Tensor Transformer::forward(const Context& ctx, const Batch& batch, Saved* saved) const {
  const Tensor memory = encode(ctx, batch.src, batch.src_lengths, saved);
  Tensor hidden = decode(ctx, batch.tgt_in, batch.tgt_lengths, memory, batch.src_lengths, saved);
  if (saved) saved->hidden = hidden;
  return project(ctx, hidden);
}

void Transformer::backward(const Context& ctx, const Batch& batch, const Saved& s, const Tensor& dlogits) const {
  const DType dt = dlogits.dtype();
  // Output projection: dE += dlogitsᵀ · h, dh = dlogits · E.
  Tensor dx = Tensor::zeros(s.hidden.shape(), dt);
  const Tensor de = ctx.grad(tgt_embedding);
  ops::matmul_backward(s.hidden, ctx.value(tgt_embedding), dlogits, &dx, &de,
                       {.trans_b = true, .precision = ctx.products});
  if (config_.pre_norm) {
    Tensor d = Tensor::zeros(dx.shape(), dt);
    decoder_norm.backward(ctx, s.decoder_norm, dx, d);
    dx = d;
  }
  Tensor dmemory = Tensor::zeros({batch.src.size(0), batch.src.size(1), config_.d_model}, dt);
  for (size_t i = decoder.size(); i-- > 0;) dx = decoder[i].backward(ctx, s.decoder[i], dx, dmemory);
  embed_backward(ctx, tgt_embedding, s.tgt_embed, dx);

  dx = dmemory;
  if (config_.pre_norm) {
    Tensor d = Tensor::zeros(dx.shape(), dt);
    encoder_norm.backward(ctx, s.encoder_norm, dx, d);
    dx = d;
  }
  for (size_t i = encoder.size(); i-- > 0;) dx = encoder[i].backward(ctx, s.encoder[i], dx);
  embed_backward(ctx, src_embedding, s.src_embed, dx);
}

}  // namespace tfm
