// Attention on the GPU against the CPU: forward and backward, fused and through products, with
// masks, dropout, shared keys, grouped-query heads, sliding windows and a decoding cache.
#include "cuda/common.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ops/attention.h"

namespace tfm {
namespace {

struct AttentionCase {
  const char* name;
  int64_t B, T, S, H, d;
  bool causal, lengths;
  double dropout;
  int64_t kv_group = 1;
  int kv_heads = 0;  // key/value heads (0: H)
  int64_t window = 0;
};

// ops::attention (and its backward, without kv_group) of one case on the CPU and the GPU, compared.
void compare_attention(const AttentionCase& c, uint64_t& seed) {
  const int64_t kvB = c.B / c.kv_group, KV = c.kv_heads == 0 ? c.H : c.kv_heads;
  const Tensor q = random({c.B, c.T, c.H * c.d}, ++seed), k = random({kvB, c.S, KV * c.d}, ++seed),
               v = random({kvB, c.S, KV * c.d}, ++seed);
  ops::AttentionArgs args;
  args.heads = static_cast<int>(c.H);
  args.kv_heads = c.kv_heads;
  args.window = c.window;
  args.causal = c.causal;
  args.kv_group = c.kv_group;
  args.dropout = c.dropout;
  args.rng = RngStream{77, 5};
  if (c.lengths) {
    std::vector<int32_t> lengths;
    for (int64_t b = 0; b < c.B; ++b) lengths.push_back(static_cast<int32_t>(std::max<int64_t>(1, c.S - (b * 3) % c.S)));
    lengths[0] = static_cast<int32_t>(c.S);
    args.key_lengths = Tensor::from<int32_t>({c.B}, lengths);
  }
  ops::AttentionArgs gpu_args = args;
  if (c.lengths) gpu_args.key_lengths = on_gpu(args.key_lengths);
  const Tensor probs = Tensor::empty({c.B, c.H, c.T, c.S}), out = Tensor::empty({c.B, c.T, c.H * c.d});
  const Tensor probs_gpu = Tensor::empty(probs.shape(), DType::F32, kGpu), out_gpu = Tensor::empty(out.shape(), DType::F32, kGpu);
  const Tensor q_gpu = on_gpu(q), k_gpu = on_gpu(k), v_gpu = on_gpu(v);
  ops::attention(q, k, v, args, probs, out);
  ops::attention(q_gpu, k_gpu, v_gpu, gpu_args, probs_gpu, out_gpu);
  expect_close(probs, probs_gpu, cat(c.name, ": probs"));
  expect_close(out, out_gpu, cat(c.name, ": out"));
  if (c.kv_group != 1) return;  // the backward is for training
  const Tensor dout = random(out.shape(), ++seed);
  const Tensor dq = random(q.shape(), ++seed), dk = random(k.shape(), ++seed), dv = random(v.shape(), ++seed);
  const Tensor dq_gpu = on_gpu(dq), dk_gpu = on_gpu(dk), dv_gpu = on_gpu(dv);
  ops::attention_backward(q, k, v, args, probs, dout, dq, dk, dv);
  ops::attention_backward(q_gpu, k_gpu, v_gpu, gpu_args, probs_gpu, on_gpu(dout), dq_gpu, dk_gpu, dv_gpu);
  expect_close(dq, dq_gpu, cat(c.name, ": dq"));
  expect_close(dk, dk_gpu, cat(c.name, ": dk"));
  expect_close(dv, dv_gpu, cat(c.name, ": dv"));
}

TEST(Cuda, AttentionForwardAndBackward) {
  REQUIRE_GPU();
  const AttentionCase cases[] = {
      {"plain", 3, 5, 7, 2, 4, false, false, 0.0},
      {"padded", 3, 5, 7, 2, 4, false, true, 0.0},
      {"causal padded", 4, 9, 9, 4, 8, true, true, 0.0},
      {"dropout", 3, 6, 10, 2, 8, false, true, 0.2},
      {"causal dropout", 2, 12, 12, 8, 16, true, true, 0.1},
      {"beams share keys", 6, 1, 9, 2, 4, false, true, 0.0, 3},
      {"causal, fewer queries than keys", 3, 4, 9, 2, 8, true, true, 0.0},
      // A head width that is not a multiple of 4: the fused kernels' plain reads.
      {"odd head width, dropout", 3, 7, 11, 2, 6, true, true, 0.1},
      {"fused forward and backward, base shape", 4, 50, 50, 8, 64, false, true, 0.1},
      // The fused forward and the products path's backward (d_k 64, 100 tokens: the common shape of
      // longer training sentences).
      {"fused forward, products backward", 2, 100, 100, 2, 64, true, true, 0.1},
      // Too large for the fused kernels' shared memory: the products path.
      {"long, causal, dropout (products path)", 2, 300, 600, 2, 64, true, true, 0.1},
      {"beams share long keys (products path)", 4, 1, 600, 2, 64, false, true, 0.0, 2},
  };
  uint64_t seed = 100;
  for (const AttentionCase& c : cases) compare_attention(c, seed);
}

// Grouped-query heads (kv_heads) and sliding windows on every path: the fused kernels (the
// backward's blocks taking a key/value head's query heads in turn), the products, beams sharing keys.
TEST(Cuda, GroupedQueryAttentionAndWindows) {
  REQUIRE_GPU();
  const AttentionCase cases[] = {
      {"grouped heads", 3, 5, 7, 4, 4, false, true, 0.0, 1, 2},
      {"multi-query, causal, dropout", 2, 12, 12, 8, 16, true, true, 0.1, 1, 1},
      {"grouped, odd head width", 3, 7, 11, 4, 6, true, true, 0.1, 1, 2},
      {"grouped, fused base shape", 4, 50, 50, 8, 64, true, true, 0.1, 1, 2},
      {"grouped, long (products path)", 2, 300, 600, 4, 64, true, true, 0.1, 1, 2},
      {"grouped beams share keys", 6, 1, 9, 4, 4, false, true, 0.0, 3, 2},
      {"multi-query beams share long keys (products path)", 4, 1, 600, 4, 64, false, true, 0.0, 2, 1},
      {"window, causal, padded", 4, 9, 9, 4, 8, true, true, 0.0, 1, 0, 3},
      {"window, not causal, odd width, dropout", 3, 7, 11, 2, 6, false, true, 0.1, 1, 0, 4},
      {"window, fewer queries than keys", 3, 4, 9, 2, 8, true, true, 0.0, 1, 0, 2},
      {"window, grouped, long (products path)", 2, 300, 600, 4, 64, true, true, 0.1, 1, 2, 50},
      {"window, beams share long keys", 4, 1, 600, 2, 64, true, true, 0.0, 2, 1, 100},
  };
  uint64_t seed = 500;
  for (const AttentionCase& c : cases) compare_attention(c, seed);
}

// A decoding cache's slabs: each entry's keys gathered from rows of [S, R, H·d].
TEST(Cuda, AttentionOverADecodingCache) {
  REQUIRE_GPU();
  const int64_t B = 5, S = 6, R = 8, H = 2, d = 4;
  const Tensor q = random({B, 1, H * d}, 200), k = random({S, R, H * d}, 201), v = random({S, R, H * d}, 202);
  std::vector<int32_t> rows;
  for (int64_t i = 0; i < B * S; ++i) rows.push_back(static_cast<int32_t>((i * 5 + 3) % R));
  ops::AttentionArgs args;
  args.heads = H;
  args.causal = true;
  args.key_rows = Tensor::from<int32_t>({B, S}, rows);
  args.key_lengths = Tensor::from<int32_t>({B}, {6, 5, 6, 2, 4});
  ops::AttentionArgs gpu_args = args;
  gpu_args.key_rows = on_gpu(args.key_rows);
  gpu_args.key_lengths = on_gpu(args.key_lengths);
  const Tensor probs = Tensor::empty({B, H, 1, S}), out = Tensor::empty({B, 1, H * d});
  const Tensor probs_gpu = Tensor::empty(probs.shape(), DType::F32, kGpu), out_gpu = Tensor::empty(out.shape(), DType::F32, kGpu);
  ops::attention(q, k, v, args, probs, out);
  ops::attention(on_gpu(q), on_gpu(k), on_gpu(v), gpu_args, probs_gpu, out_gpu);
  expect_close(probs, probs_gpu, "cached probs");
  expect_close(out, out_gpu, "cached out");
  // Lengths on the device are not read back to be checked (that would wait for the GPU): beyond S
  // they count as S, below 0 as 0 (no keys: zero probabilities and output), as the CPU's S and 0.
  args.key_lengths = Tensor::from<int32_t>({B}, {6, 0, 6, 2, 0});
  gpu_args.key_lengths = on_gpu(Tensor::from<int32_t>({B}, {S + 3, -1, 6, 2, -7}));
  ops::attention(q, k, v, args, probs, out);
  ops::attention(on_gpu(q), on_gpu(k), on_gpu(v), gpu_args, probs_gpu, out_gpu);
  expect_close(probs, probs_gpu, "cached probs, lengths beyond [0, S]", 1e-5, 1.0);
  expect_close(out, out_gpu, "cached out, lengths beyond [0, S]", 1e-5, 1.0);
}

// A decoding cache's slabs with grouped-query heads and a sliding window.
TEST(Cuda, GroupedAttentionOverADecodingCache) {
  REQUIRE_GPU();
  const int64_t B = 5, S = 9, R = 8, H = 4, d = 8;
  for (const int kv : {1, 2})
    for (const int64_t window : {0, 3}) {
      const std::string what = cat("kv_heads ", kv, ", window ", window);
      const Tensor q = random({B, 1, H * d}, 210 + kv), k = random({S, R, kv * d}, 211), v = random({S, R, kv * d}, 212);
      std::vector<int32_t> rows;
      for (int64_t i = 0; i < B * S; ++i) rows.push_back(static_cast<int32_t>((i * 5 + 3) % R));
      ops::AttentionArgs args;
      args.heads = H;
      args.kv_heads = kv;
      args.window = window;
      args.causal = true;
      args.key_rows = Tensor::from<int32_t>({B, S}, rows);
      args.key_lengths = Tensor::from<int32_t>({B}, {9, 5, 9, 2, 4});
      ops::AttentionArgs gpu_args = args;
      gpu_args.key_rows = on_gpu(args.key_rows);
      gpu_args.key_lengths = on_gpu(args.key_lengths);
      const Tensor probs = Tensor::empty({B, H, 1, S}), out = Tensor::empty({B, 1, H * d});
      const Tensor probs_gpu = Tensor::empty(probs.shape(), DType::F32, kGpu),
                   out_gpu = Tensor::empty(out.shape(), DType::F32, kGpu);
      ops::attention(q, k, v, args, probs, out);
      ops::attention(on_gpu(q), on_gpu(k), on_gpu(v), gpu_args, probs_gpu, out_gpu);
      expect_close(probs, probs_gpu, what + ": cached probs", 1e-5, 1.0);
      expect_close(out, out_gpu, what + ": cached out", 1e-5, 1.0);
    }
}

}  // namespace
}  // namespace tfm
