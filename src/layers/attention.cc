#include "layers/attention.h"

#include "ops/copy.h"
#include "ops/product.h"

namespace tfm {

MultiHeadAttention::MultiHeadAttention(ParamStore& params, const std::string& name, int64_t d_model, int64_t h,
                                       double dropout, bool bias, const AttentionVariant& v)
    : q_proj(params, name + ".q_proj", d_model, d_model, bias),
      k_proj(params, name + ".k_proj", d_model, kv_width(d_model, h, v.kv_heads), bias),
      v_proj(params, name + ".v_proj", d_model, kv_width(d_model, h, v.kv_heads), bias),
      out_proj(params, name + ".out_proj", d_model, d_model, bias),
      heads(h),
      attention_dropout(dropout),
      variant(v) {
  if (variant.kv_heads == 0) variant.kv_heads = h;
}

void MultiHeadAttention::rotate(const Tensor& q, const Tensor& k, int64_t position, bool inverse) const {
  if (variant.rope.dims == 0) return;
  ops::rotary(q, heads, variant.rope, position, Tensor(), inverse, q);
  ops::rotary(k, variant.kv_heads, variant.rope, position, Tensor(), inverse, k);
}

Tensor MultiHeadAttention::forward(const Context& ctx, const Tensor& xq_in, const Tensor& xkv_in,
                                   const AttentionMask& mask, Saved* saved, const Tensor& residual) const {
  // What the projections read, and their backward: [B, T, D], [B, S, D] (one tensor in self-attention)
  const Tensor xkv = ctx.product_input(xkv_in);
  const bool self = xq_in.raw() == xkv_in.raw() && xq_in.shape() == xkv_in.shape();
  const Tensor xq = self ? xkv : ctx.product_input(xq_in);
  const auto [k, v] = project_kv(ctx, xkv);  // [B, S, KV] each
  const Tensor q = q_proj.forward(ctx, xq);  // [B, T, D]
  rotate(q, k, 0);
  if (saved) saved->xkv = xkv;
  return attend_projected(ctx, xq, q, k, v, mask, saved, residual);
}

std::pair<Tensor, Tensor> MultiHeadAttention::project_kv(const Context& ctx, const Tensor& xkv) const {
  return {k_proj.forward(ctx, xkv), v_proj.forward(ctx, xkv)};
}

std::tuple<Tensor, Tensor, Tensor> MultiHeadAttention::project_qkv(const Context& ctx, const Tensor& x,
                                                                   const Tensor& k_out, const Tensor& v_out,
                                                                   int64_t position) const {
  TFM_CHECK(x.rank() == 3 && x.size(2) == q_proj.in, "attention: input ", x.shape(), " is not [B, T, ", q_proj.in, "]");
  const int64_t B = x.size(0), T = x.size(1), D = q_proj.out, KV = kv_width();
  TFM_CHECK(k_out.defined() == v_out.defined(), "project_qkv: keys' and values' destinations come together");
  for (const Tensor* out : {&k_out, &v_out})
    TFM_CHECK(!out->defined() || (out->shape() == Shape({B, T, KV}) && out->dtype() == x.dtype() &&
                                  out->device() == x.device()),
              "project_qkv: a destination of shape ", out->shape(), " (", name(out->dtype()), " on ",
              name(out->device()), ") for [", B, ", ", T, ", ", KV, "] (", name(x.dtype()), " on ", name(x.device()), ")");
  auto into = [&](const Tensor& out) {  // [B, T, KV]: the destination given, or a new tensor
    return out.defined() ? out : Tensor::empty({B, T, KV}, x.dtype(), x.device());
  };
  const ops::Weight fused = ctx.fused_weight(fused_key(q_proj.weight));
  if (!fused.defined()) {
    Tensor k = k_proj.forward(ctx, x), v = v_proj.forward(ctx, x);  // [B, T, KV] each
    if (k_out.defined()) {
      ops::split_columns(k, {k_out});  // one part: a copy
      ops::split_columns(v, {v_out});
      k = k_out;
      v = v_out;
    }
    const Tensor q = q_proj.forward(ctx, x);  // [B, T, D]
    rotate(q, k, position);
    return {q, k, v};
  }
  const Tensor qkv = ops::product(x, fused);  // [B, T, D + 2KV]: Q, K, V side by side, with their own biases
  // [B, T, D], [B, T, KV], [B, T, KV]
  Tensor q = Tensor::empty({B, T, D}, x.dtype(), x.device()), k = into(k_out), v = into(v_out);
  ops::split_columns(qkv, {q, k, v});
  rotate(q, k, position);
  return {q, k, v};
}

Tensor MultiHeadAttention::attend(const Context& ctx, const Tensor& xq, const Tensor& k, const Tensor& v,
                                  const AttentionMask& mask, Saved* saved, const Tensor& residual) const {
  return attend_projected(ctx, xq, q_proj.forward(ctx, xq), k, v, mask, saved, residual);
}

Tensor MultiHeadAttention::attend_projected(const Context& ctx, const Tensor& xq, const Tensor& q, const Tensor& k,
                                            const Tensor& v, const AttentionMask& mask, Saved* saved,
                                            const Tensor& residual) const {
  const int64_t B = xq.size(0), T = xq.size(1), S = mask.key_rows.defined() ? k.size(0) : k.size(1);
  ops::AttentionArgs args;
  args.heads = static_cast<int>(heads);
  args.causal = mask.causal;
  args.key_lengths = mask.key_lengths;
  args.kv_group = mask.kv_group;
  args.key_rows = mask.key_rows;
  args.kv_heads = static_cast<int>(variant.kv_heads);
  args.window = variant.window;
  if (ctx.training() && attention_dropout > 0) {
    args.dropout = attention_dropout;
    args.rng = ctx.rng->next();
  }
  Tensor probs = Tensor::empty({B, heads, T, S}, q.dtype(), q.device());     // [B, H, T, S]
  Tensor heads_out = Tensor::empty({B, T, q.size(2)}, q.dtype(), q.device());  // [B, T, D]
  ops::attention(q, k, v, args, probs, heads_out);
  heads_out = ctx.product_input(heads_out);  // what W^O reads, and its backward
  Tensor y = out_proj.forward(ctx, heads_out, Activation::kNone, residual);  // [B, T, D]
  if (saved) {
    saved->xq = xq;
    saved->q = q;
    saved->k = k;
    saved->v = v;
    saved->probs = probs;
    saved->heads_out = heads_out;
    saved->args = args;
  }
  return y;
}

void MultiHeadAttention::backward(const Context& ctx, const Saved& s, const Tensor& dy, const Tensor& dxq,
                                  const Tensor& dxkv) const {
  Tensor dheads = Tensor::zeros(s.heads_out.shape(), dy.dtype(), dy.device());  // [B, T, D]
  out_proj.backward(ctx, s.heads_out, dy, &dheads);
  Tensor dq = Tensor::zeros(s.q.shape(), dy.dtype(), dy.device());  // [B, T, D]
  Tensor dk = Tensor::zeros(s.k.shape(), dy.dtype(), dy.device());  // [B, S, KV]
  Tensor dv = Tensor::zeros(s.v.shape(), dy.dtype(), dy.device());  // [B, S, KV]
  ops::attention_backward(s.q, s.k, s.v, s.args, s.probs, dheads, dq, dk, dv);
  rotate(dq, dk, 0, true);  // through the rotation: its transpose, the inverse
  q_proj.backward(ctx, s.xq, dq, &dxq);
  k_proj.backward(ctx, s.xkv, dk, &dxkv);
  v_proj.backward(ctx, s.xkv, dv, &dxkv);
}

}  // namespace tfm
