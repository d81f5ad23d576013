// The model's input embeddings: token embeddings (scaled), positions (sinusoidal or a learned
// table), token types, the embedding norm and dropout; and their backward.
#include "model/transformer.h"

#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/positional.h"

namespace tfm {

namespace {
bool sinusoidal(const ModelConfig& c) { return c.positions == "interleaved" || c.positions == "sin_cos"; }

// rows[x] of `table` added to x [B, L, D], ids int32 [B, L] (ops::embedding into a scratch tensor).
void add_rows(const Tensor& x, const Tensor& table, const Tensor& ids) {
  Tensor rows = Tensor::empty(x.shape(), x.dtype(), x.device());  // [B, L, D]
  ops::embedding(ids, table, 1.0, rows);
  ops::add(x, rows, x);
}
}  // namespace

void Transformer::add_embedding_extras() {
  const ModelConfig& c = config_;
  embed_extra_ids_.first = params_.size();
  if (c.positions == "learned") positions_table = params_.add("positions.weight", {c.max_positions, c.d_model});
  if (c.token_types > 0) token_type_table = params_.add("token_types.weight", {c.token_types, c.d_model});
  if (c.embedding_norm)
    embed_norm = LayerNorm(params_, "embed_norm", c.d_model, c.layer_norm_eps, parse_norm_kind(c.norm));
  embed_extra_ids_.end = params_.size();
}

void Transformer::add_learned_positions(const Context& ctx, const Tensor& x, const Tensor& ids, int64_t start, EmbedSaved& s) const {
  const int64_t B = ids.size(0), L = ids.size(1), first = config_.position_offset + start;
  TFM_CHECK(first + L <= config_.max_positions, "model: a sequence of ", start + L, " tokens is longer than the ",
            config_.max_positions - config_.position_offset, " that max_positions ", config_.max_positions,
            " allows (position_offset ", config_.position_offset, ")");
  std::vector<int32_t> rows(static_cast<size_t>(B * L));
  for (int64_t i = 0; i < B * L; ++i) rows[static_cast<size_t>(i)] = static_cast<int32_t>(first + i % L);
  s.position_ids = Tensor::from<int32_t>({B, L}, rows).on(ids.device());  // [B, L]
  add_rows(x, ctx.value(positions_table), s.position_ids);
}

Tensor Transformer::embed(const Context& ctx, int table, const Tensor& ids, int64_t start, EmbedSaved* saved,
                          const Tensor& types) const {
  check_rank("embed", "ids", ids, 2);
  TFM_CHECK(!types.defined() || token_type_table >= 0, "model: token types given, but the model has none (token_types 0)");
  TFM_CHECK(!types.defined() || types.shape() == ids.shape(), "model: token types of shape ", types.shape(),
            " for token ids of shape ", ids.shape());
  const Tensor e = ctx.value(table);  // [V, D]
  Tensor x = Tensor::empty({ids.size(0), ids.size(1), config_.d_model}, e.dtype(), e.device());  // [B, L, D]
  ops::embedding(ids, e, embedding_scale(), x);  // E[ids] · √D (§3.4); id −1: zeros
  EmbedSaved s{ids, {}, {}, {}, {}, ctx.training() && config_.embedding_dropout > 0};
  if (sinusoidal(config_)) ops::add_positional_encoding(x, start, positions_);  // + PE (§3.5)
  if (positions_table >= 0) add_learned_positions(ctx, x, ids, start, s);
  if (token_type_table >= 0) {
    s.types = types.defined() ? types : Tensor::zeros(ids.shape(), DType::I32).on(ids.device());  // [B, L]
    add_rows(x, ctx.value(token_type_table), s.types);
  }
  if (config_.embedding_norm) x = embed_norm.forward(ctx, x, &s.norm);
  if (s.dropped) {
    s.dropout = ctx.rng->next();
    ops::dropout(x, config_.embedding_dropout, s.dropout, x);
  }
  if (saved) *saved = s;
  return x;
}

void Transformer::embed_backward(const Context& ctx, int table, const EmbedSaved& s, const Tensor& dx_in) const {
  Tensor dx = dx_in;  // [B, L, D]
  if (s.dropped) ops::dropout(dx, config_.embedding_dropout, s.dropout, dx);  // same mask, in place
  if (config_.embedding_norm) {
    Tensor d = Tensor::zeros(dx.shape(), dx.dtype(), dx.device());  // [B, L, D]
    embed_norm.backward(ctx, s.norm, dx, d);
    dx = d;
  }
  ops::embedding_backward(s.ids, dx, embedding_scale(), ctx.grad(table));
  if (positions_table >= 0) ops::embedding_backward(s.position_ids, dx, 1.0, ctx.grad(positions_table));
  if (token_type_table >= 0) ops::embedding_backward(s.types, dx, 1.0, ctx.grad(token_type_table));
}

}  // namespace tfm
