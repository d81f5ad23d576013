// Grouped-query attention (AttentionArgs::kv_heads) and sliding windows (AttentionArgs::window):
// against plain attention with each key/value head repeated for its query heads, against an
// explicit mask computed here, by finite differences, and on the decoding paths (one query, beams
// sharing keys, a decoding cache's slabs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "testing/errors.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

using testing::random_tensor;

// Which keys each query sees, and how the heads are laid out.
struct Variant {
  int64_t heads = 4, kv_heads = 4, d_k = 3, d_v = 5;
  bool causal = false;
  int64_t window = 0;
  std::vector<int32_t> lengths;  // empty: no padding
};

ops::AttentionArgs args_of(const Variant& s, int64_t batch) {
  ops::AttentionArgs args;
  args.heads = static_cast<int>(s.heads);
  args.kv_heads = static_cast<int>(s.kv_heads);
  args.causal = s.causal;
  args.window = s.window;
  if (!s.lengths.empty()) args.key_lengths = Tensor::from<int32_t>({batch}, s.lengths);
  return args;
}

// (out [B, T, H·d_v], probs [B, H, T, S]) of ops::attention.
std::pair<Tensor, Tensor> run(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionArgs& args) {
  const int64_t B = q.size(0), T = q.size(1), S = args.key_rows.defined() ? k.size(0) : k.size(1), H = args.heads,
                KV = args.kv_heads == 0 ? H : args.kv_heads;
  Tensor probs = Tensor::zeros({B, H, T, S}, q.dtype()), out = Tensor::zeros({B, T, H * (v.size(2) / KV)}, q.dtype());
  ops::attention(q, k, v, args, probs, out);
  return {out, probs};
}

// x [N, ...] → [N·g, ...], each entry repeated g times (what beams sharing keys read).
Tensor repeat_entries(const Tensor& x, int64_t g) {
  const std::vector<double> in = x.to_doubles();
  const size_t per = in.size() / static_cast<size_t>(x.size(0));
  std::vector<double> out;
  for (size_t at = 0; at < in.size(); at += per)
    for (int64_t j = 0; j < g; ++j) out.insert(out.end(), in.begin() + at, in.begin() + at + per);
  std::vector<int64_t> dims = x.shape().to_vector();
  dims[0] *= g;
  return Tensor::from<double>(Shape(dims), out).to(x.dtype());
}

// x [B, S, KV·d] → [B, S, H·d], head h a copy of key/value head h / (H / KV).
Tensor repeat_heads(const Tensor& x, int64_t heads, int64_t kv_heads) {
  const int64_t B = x.size(0), S = x.size(1), d = x.size(2) / kv_heads, r = heads / kv_heads;
  const std::vector<double> in = x.to_doubles();
  std::vector<double> out(static_cast<size_t>(B * S * heads * d));
  for (int64_t row = 0; row < B * S; ++row)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < d; ++c) out[(row * heads + h) * d + c] = in[(row * kv_heads + h / r) * d + c];
  return Tensor::from<double>({B, S, heads * d}, out).to(x.dtype());
}

// The reverse for gradients: [B, S, H·d] → [B, S, KV·d], each key/value head the sum of its query heads'.
std::vector<double> group_sums(const Tensor& x, int64_t heads, int64_t kv_heads) {
  const int64_t rows = x.size(0) * x.size(1), d = x.size(2) / heads, r = heads / kv_heads;
  const std::vector<double> in = x.to_doubles();
  std::vector<double> out(static_cast<size_t>(rows * kv_heads * d), 0.0);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < d; ++c) out[(row * kv_heads + h / r) * d + c] += in[(row * heads + h) * d + c];
  return out;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << what << " element " << i;
    ASSERT_NEAR(got[i], want[i], tol) << what << " element " << i;
  }
}

// Whether query t (of T) sees key j (of S) in batch entry b: padding, causal and window masks as
// the header defines them, written out directly.
bool sees(const Variant& s, int64_t b, int64_t t, int64_t j, int64_t T, int64_t S) {
  const int64_t i = t + (S - T);
  if (!s.lengths.empty() && j >= s.lengths[b]) return false;
  if (s.causal && j > i) return false;
  return s.window == 0 || i - s.window < j;
}

// Attention computed the obvious way in double precision, with the mask of sees().
std::pair<std::vector<double>, std::vector<double>> reference(const Variant& s, const Tensor& q, const Tensor& k,
                                                              const Tensor& v) {
  const int64_t B = q.size(0), T = q.size(1), S = k.size(1), H = s.heads, KV = s.kv_heads, r = H / KV;
  const std::vector<double> qd = q.to_doubles(), kd = k.to_doubles(), vd = v.to_doubles();
  std::vector<double> out(static_cast<size_t>(B * T * H * s.d_v), 0.0), probs(static_cast<size_t>(B * H * T * S), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        double* p = probs.data() + ((b * H + h) * T + t) * S;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          if (!sees(s, b, t, j, T, S)) continue;
          double dot = 0;
          for (int64_t c = 0; c < s.d_k; ++c)
            dot += qd[((b * T + t) * H + h) * s.d_k + c] * kd[((b * S + j) * KV + h / r) * s.d_k + c];
          p[j] = dot / std::sqrt(static_cast<double>(s.d_k));
          mx = std::max(mx, p[j]);
        }
        for (int64_t j = 0; j < S; ++j) sum += sees(s, b, t, j, T, S) ? std::exp(p[j] - mx) : 0.0;
        for (int64_t j = 0; j < S; ++j) p[j] = sees(s, b, t, j, T, S) ? std::exp(p[j] - mx) / sum : 0.0;
        for (int64_t j = 0; j < S; ++j)
          for (int64_t c = 0; c < s.d_v; ++c)
            out[((b * T + t) * H + h) * s.d_v + c] += p[j] * vd[((b * S + j) * KV + h / r) * s.d_v + c];
      }
  return {out, probs};
}

struct Inputs {
  Tensor q, k, v;
};
Inputs inputs(const Variant& s, int64_t B, int64_t T, int64_t S, DType dtype, uint64_t seed) {
  return {random_tensor({B, T, s.heads * s.d_k}, seed).to(dtype),
          random_tensor({B, S, s.kv_heads * s.d_k}, seed + 1).to(dtype),
          random_tensor({B, S, s.kv_heads * s.d_v}, seed + 2, -3, 3).to(dtype)};
}

// GQA forward and backward = plain attention over k, v with each key/value head repeated; the
// repeated version's dk, dv summed over each group = GQA's dk, dv.
TEST(GroupedQueryAttention, EqualsPlainAttentionWithRepeatedKeysAndValues) {
  for (const int64_t kv : {1, 2, 4})
    for (const DType dtype : {DType::F64, DType::F32}) {
      Variant s;
      s.kv_heads = kv;
      s.causal = true;
      s.lengths = {7, 4, 6};
      const int64_t B = 3, T = 5, S = 7;
      const std::string what = "kv_heads " + std::to_string(kv) + " " + name(dtype);
      const double tol = dtype == DType::F64 ? 1e-12 : 2e-6;
      const Inputs in = inputs(s, B, T, S, dtype, 10 * kv);
      const Tensor k_rep = repeat_heads(in.k, s.heads, kv), v_rep = repeat_heads(in.v, s.heads, kv);
      const ops::AttentionArgs args = args_of(s, B);
      ops::AttentionArgs plain = args;
      plain.kv_heads = 0;
      auto [out, probs] = run(in.q, in.k, in.v, args);
      auto [out_rep, probs_rep] = run(in.q, k_rep, v_rep, plain);
      expect_near(out.to_doubles(), out_rep.to_doubles(), tol, what + " out");
      expect_near(probs.to_doubles(), probs_rep.to_doubles(), tol, what + " probs");
      const Tensor dout = random_tensor(out.shape(), 99).to(dtype);
      Tensor dq = Tensor::zeros(in.q.shape(), dtype), dk = Tensor::zeros(in.k.shape(), dtype),
             dv = Tensor::zeros(in.v.shape(), dtype);
      Tensor dq_rep = Tensor::zeros(in.q.shape(), dtype), dk_rep = Tensor::zeros(k_rep.shape(), dtype),
             dv_rep = Tensor::zeros(v_rep.shape(), dtype);
      ops::attention_backward(in.q, in.k, in.v, args, probs, dout, dq, dk, dv);
      ops::attention_backward(in.q, k_rep, v_rep, plain, probs_rep, dout, dq_rep, dk_rep, dv_rep);
      expect_near(dq.to_doubles(), dq_rep.to_doubles(), tol, what + " dq");
      expect_near(dk.to_doubles(), group_sums(dk_rep, s.heads, kv), tol, what + " dk");
      expect_near(dv.to_doubles(), group_sums(dv_rep, s.heads, kv), tol, what + " dv");
    }
}

// Windows (with and without causal, padding, fewer queries than keys, GQA) against the explicit mask.
TEST(SlidingWindow, EqualsAnExplicitMask) {
  struct Case {
    const char* name;
    int64_t T, S, window, kv_heads;
    bool causal;
    std::vector<int32_t> lengths;
  };
  const Case cases[] = {
      {"causal", 6, 6, 3, 4, true, {}},
      {"not causal", 6, 6, 2, 4, false, {}},
      {"window of one key", 5, 5, 1, 4, true, {}},
      {"window wider than the keys", 5, 5, 9, 4, true, {}},
      {"fewer queries than keys", 3, 8, 4, 4, true, {}},
      // entry 1's padding ends before some queries' windows begin: all masked, zeros
      {"padding, grouped heads", 7, 7, 2, 2, true, {7, 3}},
  };
  for (const Case& c : cases)
    for (const DType dtype : {DType::F64, DType::F32}) {
      Variant s;
      s.kv_heads = c.kv_heads;
      s.causal = c.causal;
      s.window = c.window;
      s.lengths = c.lengths;
      const int64_t B = c.lengths.empty() ? 2 : static_cast<int64_t>(c.lengths.size());
      const Inputs in = inputs(s, B, c.T, c.S, dtype, 40);
      auto [out, probs] = run(in.q, in.k, in.v, args_of(s, B));
      auto [want_out, want_probs] = reference(s, in.q, in.k, in.v);
      const double tol = dtype == DType::F64 ? 1e-12 : 2e-6;
      const std::string what = std::string(c.name) + " " + name(dtype);
      expect_near(probs.to_doubles(), want_probs, tol, what + " probs");
      expect_near(out.to_doubles(), want_out, tol * 3, what + " out");
    }
}

// Finite differences of the backward for GQA (with padding and dropout) and for windows.
TEST(AttentionVariants, BackwardMatchesFiniteDifferences) {
  struct Case {
    const char* name;
    int64_t kv_heads, window, T, S;
    bool causal;
    std::vector<int32_t> lengths;
    double dropout;
  };
  const Case cases[] = {
      {"multi-query", 1, 0, 4, 6, false, {6, 3}, 0.0},
      {"grouped, causal, dropout", 2, 0, 5, 5, true, {5, 4}, 0.2},
      {"window, causal", 4, 2, 5, 5, true, {}, 0.0},
      {"window, not causal, grouped", 2, 3, 4, 6, false, {6, 5}, 0.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Variant s;
    s.kv_heads = c.kv_heads;
    s.window = c.window;
    s.causal = c.causal;
    s.lengths = c.lengths;
    const int64_t B = 2;
    Inputs in = inputs(s, B, c.T, c.S, DType::F64, 70);
    ops::AttentionArgs args = args_of(s, B);
    args.dropout = c.dropout;
    args.rng = RngStream{5, 9};
    const Tensor w = random_tensor({B, c.T, s.heads * s.d_v}, 74);
    Tensor probs = Tensor::zeros({B, s.heads, c.T, c.S}, DType::F64), out = Tensor::zeros(w.shape(), DType::F64);
    auto loss = [&] {
      ops::attention(in.q, in.k, in.v, args, probs, out);
      return testing::weighted_sum(out, w);
    };
    loss();
    Tensor dq = Tensor::zeros(in.q.shape(), DType::F64), dk = Tensor::zeros(in.k.shape(), DType::F64),
           dv = Tensor::zeros(in.v.shape(), DType::F64);
    ops::attention_backward(in.q, in.k, in.v, args, probs, w, dq, dk, dv);
    testing::expect_gradients_match(loss, {{"q", in.q, dq}, {"k", in.k, dk}, {"v", in.v, dv}});
  }
}

// One query per entry (the decoding loops, float's vector kernels at d 16, the plain loops at d 3):
// entries' own keys, beams sharing an entry's keys (kv_group), and a decoding cache's slabs
// (key_rows) all agree with the explicit mask, for GQA and windows.
TEST(AttentionVariants, DecodingPathsAgree) {
  const int64_t B = 4, S = 9, R = 6;
  for (const int64_t d : {3, 16})
    for (const int64_t kv : {1, 2, 4})
      for (const int64_t window : {0, 1, 4}) {
        Variant s;
        s.kv_heads = kv;
        s.d_k = s.d_v = d;
        s.causal = true;
        s.window = window;
        s.lengths = {9, 7, 9, 2};
        const std::string what = "d " + std::to_string(d) + ", kv_heads " + std::to_string(kv) + ", window " +
                                 std::to_string(window);
        const Inputs in = inputs(s, B, 1, S, DType::F32, 100 + d + kv);
        const ops::AttentionArgs args = args_of(s, B);
        auto [out, probs] = run(in.q, in.k, in.v, args);
        auto [want_out, want_probs] = reference(s, in.q, in.k, in.v);
        expect_near(probs.to_doubles(), want_probs, 2e-6, what + " probs");
        expect_near(out.to_doubles(), want_out, 1e-5, what + " out");
        // Beams: entries 2b and 2b + 1 share entry b's keys (here entries 0 and 1 of k, v).
        ops::AttentionArgs beams = args;
        beams.kv_group = 2;
        beams.key_lengths = Tensor::from<int32_t>({B}, {9, 9, 7, 7});
        const Tensor k2 = in.k.rows(0, 2), v2 = in.v.rows(0, 2);
        auto [beam_out, beam_probs] = run(in.q, k2, v2, beams);
        Variant sb = s;
        sb.lengths = {9, 9, 7, 7};
        const Tensor k_dup = repeat_entries(k2, 2), v_dup = repeat_entries(v2, 2);
        auto [beam_want, beam_want_probs] = reference(sb, in.q, k_dup, v_dup);
        expect_near(beam_out.to_doubles(), beam_want, 1e-5, what + " beams out");
        expect_near(beam_probs.to_doubles(), beam_want_probs, 2e-6, what + " beams probs");
        // A cache's slabs: key s of entry b is row rows[b, s] of [S, R, KV·d]; the plain path reads
        // the same keys gathered into [B, S, KV·d].
        std::vector<int32_t> rows;
        for (int64_t i = 0; i < B * S; ++i) rows.push_back(static_cast<int32_t>((i * 5 + 3) % R));
        const Tensor k_slab = random_tensor({S, R, kv * d}, 300 + kv).to(DType::F32),
                     v_slab = random_tensor({S, R, kv * d}, 400 + kv).to(DType::F32);
        std::vector<double> kg, vg;
        const std::vector<double> ks = k_slab.to_doubles(), vs = v_slab.to_doubles();
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < S; ++j) {
            const int64_t at = (j * R + rows[b * S + j]) * kv * d;
            kg.insert(kg.end(), ks.begin() + at, ks.begin() + at + kv * d);
            vg.insert(vg.end(), vs.begin() + at, vs.begin() + at + kv * d);
          }
        ops::AttentionArgs cached = args;
        cached.key_rows = Tensor::from<int32_t>({B, S}, rows);
        auto [cache_out, cache_probs] = run(in.q, k_slab, v_slab, cached);
        auto [plain_out, plain_probs] = run(in.q, Tensor::from<double>({B, S, kv * d}, kg).to(DType::F32),
                                            Tensor::from<double>({B, S, kv * d}, vg).to(DType::F32), args);
        expect_near(cache_out.to_doubles(), plain_out.to_doubles(), 1e-6, what + " cache out");
        expect_near(cache_probs.to_doubles(), plain_probs.to_doubles(), 1e-7, what + " cache probs");
      }
}

TEST(AttentionVariants, BadHeadsAndWindowsAreErrors) {
  Variant s;
  const Inputs in = inputs(s, 2, 3, 4, DType::F64, 1);
  Tensor probs = Tensor::zeros({2, 4, 3, 4}, DType::F64), out = Tensor::zeros({2, 3, 4 * s.d_v}, DType::F64);
  ops::AttentionArgs args = args_of(s, 2);
  args.kv_heads = 3;
  testing::expect_error([&] { ops::attention(in.q, in.k, in.v, args, probs, out); },
                        {"heads (4)", "kv_heads (3)", "multiple"});
  args.kv_heads = -2;
  testing::expect_error([&] { ops::attention(in.q, in.k, in.v, args, probs, out); }, {"kv_heads (-2)"});
  args.kv_heads = 0;
  args.window = -1;
  testing::expect_error([&] { ops::attention(in.q, in.k, in.v, args, probs, out); }, {"window", "-1"});
  testing::expect_error(
      [&] {
        Tensor dq = Tensor::zeros(in.q.shape(), DType::F64), dk = Tensor::zeros(in.k.shape(), DType::F64),
               dv = Tensor::zeros(in.v.shape(), DType::F64);
        ops::attention_backward(in.q, in.k, in.v, args, probs, out, dq, dk, dv);
      },
      {"attention_backward", "window", "-1"});
  // k and v with 4 heads' columns where kv_heads says 2.
  args.window = 0;
  args.kv_heads = 2;
  testing::expect_error([&] { ops::attention(in.q, in.k, in.v, args, probs, out); }, {"k ", "2 heads"});
}

}  // namespace
}  // namespace tfm
