#include "ops/attention.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

namespace {
// The key/value heads (kv_heads, or heads when 0), after checking them and the window.
int64_t check_heads(const char* op, const AttentionArgs& args) {
  const int64_t h = args.heads, kv = args.kv_heads == 0 ? h : args.kv_heads;
  TFM_CHECK(h >= 1, op, ": heads must be at least 1, got ", h);
  TFM_CHECK(kv >= 1 && h % kv == 0, op, ": heads (", h, ") must be a multiple of kv_heads (", args.kv_heads,
            "), which must be positive (or 0 for as many as heads)");
  TFM_CHECK(args.window >= 0, op, ": window must be 0 (none) or a positive number of keys, got ", args.window);
  return kv;
}

cpu::AttentionDims check_shapes(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionArgs& args, const Tensor& probs, const Tensor& out) {
  check_rank(op, "q", q, 3);
  check_rank(op, "k", k, 3);
  check_rank(op, "v", v, 3);
  const int64_t h = args.heads, kv = check_heads(op, args);
  TFM_CHECK(q.size(2) % h == 0 && v.size(2) % kv == 0, op, ": widths of q ", q.shape(), " and v ", v.shape(),
            " must be multiples of the ", h, " heads and the ", kv, " key/value heads");
  for (const auto& [what, t] : {std::pair<const char*, const Tensor*>{"key_lengths", &args.key_lengths},
                                {"key_rows", &args.key_rows}})
    TFM_CHECK(!t->defined() || t->device() == Device::CPU || t->device() == q.device(), op, ": ", what, " is on ",
              name(t->device()), ", q on ", name(q.device()), " (they go on the host or with q)");
  const bool shared = args.key_rows.defined();  // k, v: [S, R, H·d] slabs
  cpu::AttentionDims d{q.size(0), q.size(1), shared ? k.size(0) : k.size(1), h, q.size(2) / h, v.size(2) / kv,
                       args.kv_group, shared ? k.size(1) : 0, kv, args.window};
  TFM_CHECK(args.kv_group >= 1, op, ": kv_group must be >= 1, got ", args.kv_group);
  if (shared) {
    TFM_CHECK(d.queries == 1 && args.kv_group == 1 && args.dropout == 0, op,
              ": key_rows are for decoding (one query per entry, kv_group 1, no dropout); got ", d.queries,
              " queries, kv_group ", args.kv_group, ", dropout ", args.dropout);
    check_dtype(op, "key_rows", args.key_rows, DType::I32);
    TFM_CHECK(args.key_rows.shape() == Shape({d.batch, d.keys}), op, ": key_rows has shape ", args.key_rows.shape(),
              ", expected [", d.batch, ", ", d.keys, "]");
    TFM_CHECK(v.size(0) == d.keys && v.size(1) == d.kv_rows, op, ": k ", k.shape(), " and v ", v.shape(),
              " have different slabs");
    if (args.key_rows.device() == Device::CPU) {  // a device's are the caller's to check (decode_step)
      const HostInts rows(args.key_rows);
      for (int64_t i = 0; i < args.key_rows.numel(); ++i)
        TFM_CHECK(rows[i] >= 0 && rows[i] < d.kv_rows, op, ": key_rows[", i / d.keys, ", ", i % d.keys, "] = ",
                  rows[i], " is outside the slab's [0, ", d.kv_rows, ")");
    }
  } else {
    TFM_CHECK(k.size(0) * args.kv_group == d.batch && v.size(0) == k.size(0), op, ": batch sizes differ: q ",
              q.shape(), ", k ", k.shape(), ", v ", v.shape(), " with ", args.kv_group, " queries per key/value entry");
    TFM_CHECK(v.size(1) == d.keys, op, ": k ", k.shape(), " and v ", v.shape(), " have different numbers of keys");
  }
  TFM_CHECK(k.size(2) == kv * d.d_k, op, ": k ", k.shape(), " must be ", kv, " heads of the width of q ", q.shape(),
            "'s ", h, " heads (", kv * d.d_k, " columns)");
  TFM_CHECK(out.shape() == Shape({d.batch, d.queries, h * d.d_v}), op, ": out has shape ", out.shape(),
            ", expected [", d.batch, ", ", d.queries, ", ", h * d.d_v, "]");
  TFM_CHECK(probs.shape() == Shape({d.batch, h, d.queries, d.keys}), op, ": probs has shape ", probs.shape(),
            ", expected [", d.batch, ", ", h, ", ", d.queries, ", ", d.keys, "]");
  TFM_CHECK(args.dropout >= 0 && args.dropout < 1, op, ": dropout rate must be in [0, 1), got ", args.dropout);
  if (args.key_lengths.defined()) {
    check_dtype(op, "key_lengths", args.key_lengths, DType::I32);
    TFM_CHECK(args.key_lengths.numel() == d.batch, op, ": key_lengths has ", args.key_lengths.numel(),
              " entries for a batch of ", d.batch);
    if (args.key_lengths.device() == Device::CPU) {  // a device's: reading them back would wait for it
      const HostInts lengths(args.key_lengths);
      for (int64_t b = 0; b < d.batch; ++b) {
        const int32_t len = lengths[b];
        TFM_CHECK(len >= 0 && len <= d.keys, op, ": key_lengths[", b, "] = ", len, " is outside [0, ", d.keys, "]");
      }
    }
  }
  return d;
}

const int32_t* lengths(const AttentionArgs& args) {
  return args.key_lengths.defined() ? args.key_lengths.data<int32_t>() : nullptr;
}

cuda::AttentionDims on_cuda(const cpu::AttentionDims& d) {
  return {d.batch, d.queries, d.keys, d.heads, d.d_k, d.d_v, d.kv_group, d.kv_rows, d.kv_heads, d.window};
}
}  // namespace

void attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionArgs& args, const Tensor& probs,
               const Tensor& out) {
  const cpu::AttentionDims d = check_shapes("attention", q, k, v, args, probs, out);
  check_all("attention", q.dtype(), q.device(), {{"k", &k}, {"v", &v}, {"probs", &probs}, {"out", &out}});
  dispatch("attention", q.dtype(), q.device(), [&](auto t) {
    using T = decltype(t);
    cpu::attention<T>(d, q.data<T>(), k.data<T>(), v.data<T>(), args.causal, lengths(args),
                      args.key_rows.defined() ? args.key_rows.data<int32_t>() : nullptr, args.dropout, args.rng,
                      probs.data<T>(), out.data<T>());
  }, [&](cuda::Kernels& kernels) {
    AttentionArgs on_gpu = args;  // lengths and a cache's rows may come from the host
    on_gpu.key_lengths = on_device(args.key_lengths, Device::CUDA);
    on_gpu.key_rows = on_device(args.key_rows, Device::CUDA);
    kernels.attention(on_cuda(d), q.data<float>(), k.data<float>(), v.data<float>(), args.causal, lengths(on_gpu),
                      on_gpu.key_rows.defined() ? on_gpu.key_rows.data<int32_t>() : nullptr, args.dropout, args.rng,
                      probs.data<float>(), out.data<float>());
  });
}

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionArgs& args,
                        const Tensor& probs, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv) {
  const cpu::AttentionDims d = check_shapes("attention_backward", q, k, v, args, probs, dout);
  TFM_CHECK(args.kv_group == 1, "attention_backward: shared keys and values (kv_group ", args.kv_group,
            ") are for decoding only");
  TFM_CHECK(!args.key_rows.defined(), "attention_backward: a decoding cache's slabs (key_rows) are for decoding only");
  check_same_shape("attention_backward", "q", q, "dq", dq);
  check_same_shape("attention_backward", "k", k, "dk", dk);
  check_same_shape("attention_backward", "v", v, "dv", dv);
  check_all("attention_backward", q.dtype(), q.device(),
            {{"k", &k}, {"v", &v}, {"probs", &probs}, {"dout", &dout}, {"dq", &dq}, {"dk", &dk}, {"dv", &dv}});
  dispatch("attention_backward", q.dtype(), q.device(), [&](auto t) {
    using T = decltype(t);
    cpu::attention_backward<T>(d, q.data<T>(), k.data<T>(), v.data<T>(), args.causal, lengths(args), args.dropout,
                               args.rng, probs.data<T>(), dout.data<T>(), dq.data<T>(), dk.data<T>(), dv.data<T>());
  }, [&](cuda::Kernels& kernels) {
    AttentionArgs on_gpu = args;
    on_gpu.key_lengths = on_device(args.key_lengths, Device::CUDA);
    kernels.attention_backward(on_cuda(d), q.data<float>(), k.data<float>(), v.data<float>(), args.causal,
                               lengths(on_gpu), args.dropout, args.rng, probs.data<float>(), dout.data<float>(),
                               dq.data<float>(), dk.data<float>(), dv.data<float>());
  });
}

}  // namespace tfm::ops
