#include "layers/attention.h"

namespace tfm {

MultiHeadAttention::MultiHeadAttention(ParamStore& params, const std::string& name, int64_t d_model, int64_t h,
                                       double dropout)
    : q_proj(params, name + ".q_proj", d_model, d_model),
      k_proj(params, name + ".k_proj", d_model, d_model),
      v_proj(params, name + ".v_proj", d_model, d_model),
      out_proj(params, name + ".out_proj", d_model, d_model),
      heads(h),
      attention_dropout(dropout) {}

Tensor MultiHeadAttention::forward(const Context& ctx, const Tensor& xq, const Tensor& xkv, const AttentionMask& mask,
                                   Saved* saved) const {
  const auto [k, v] = project_kv(ctx, xkv);
  if (saved) saved->xkv = xkv;
  return attend(ctx, xq, k, v, mask, saved);
}

std::pair<Tensor, Tensor> MultiHeadAttention::project_kv(const Context& ctx, const Tensor& xkv) const {
  return {k_proj.forward(ctx, xkv), v_proj.forward(ctx, xkv)};
}

Tensor MultiHeadAttention::attend(const Context& ctx, const Tensor& xq, const Tensor& k, const Tensor& v,
                                  const AttentionMask& mask, Saved* saved) const {
  const int64_t B = xq.size(0), T = xq.size(1), S = mask.key_rows.defined() ? k.size(0) : k.size(1);
  Tensor q = q_proj.forward(ctx, xq);
  ops::AttentionArgs args;
  args.heads = static_cast<int>(heads);
  args.causal = mask.causal;
  args.key_lengths = mask.key_lengths;
  args.kv_group = mask.kv_group;
  args.key_rows = mask.key_rows;
  if (ctx.training() && attention_dropout > 0) {
    args.dropout = attention_dropout;
    args.rng = ctx.rng->next();
  }
  Tensor probs = Tensor::empty({B, heads, T, S}, xq.dtype(), xq.device());
  Tensor heads_out = Tensor::empty({B, T, q.size(2)}, xq.dtype(), xq.device());
  ops::attention(q, k, v, args, probs, heads_out);
  Tensor y = out_proj.forward(ctx, heads_out);
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
  Tensor dheads = Tensor::zeros(s.heads_out.shape(), dy.dtype(), dy.device());
  out_proj.backward(ctx, s.heads_out, dy, &dheads);
  Tensor dq = Tensor::zeros(s.q.shape(), dy.dtype(), dy.device());
  Tensor dk = Tensor::zeros(s.k.shape(), dy.dtype(), dy.device());
  Tensor dv = Tensor::zeros(s.v.shape(), dy.dtype(), dy.device());
  ops::attention_backward(s.q, s.k, s.v, s.args, s.probs, dheads, dq, dk, dv);
  q_proj.backward(ctx, s.xq, dq, &dxq);
  k_proj.backward(ctx, s.xkv, dk, &dxkv);
  v_proj.backward(ctx, s.xkv, dv, &dxkv);
}

}  // namespace tfm
