// Masks: a padded batch gives, at every real position, the same outputs as each sentence alone;
// masked keys get exactly zero weight; a query with every key masked gets zeros, never NaN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ops/attention.h"
#include "testing/errors.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

using testing::random_tensor;

constexpr int64_t kHeads = 3, kDk = 4, kDv = 5;

// Runs attention on a batch; returns (out [B, T, H·d_v], probs [B, H, T, S]).
std::pair<Tensor, Tensor> run(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                              const std::vector<int32_t>& key_lengths, DType dtype) {
  const int64_t B = q.size(0), T = q.size(1), S = k.size(1);
  ops::AttentionArgs args;
  args.heads = kHeads;
  args.causal = causal;
  if (!key_lengths.empty()) args.key_lengths = Tensor::from<int32_t>({B}, key_lengths);
  Tensor probs = Tensor::zeros({B, kHeads, T, S}, dtype), out = Tensor::zeros({B, T, kHeads * kDv}, dtype);
  ops::attention(q.to(dtype), k.to(dtype), v.to(dtype), args, probs, out);
  return {out, probs};
}

// Copies rows [0, len) of batch entry b of x [B, L, W] into a new [1, len, W] tensor.
Tensor sentence(const Tensor& x, int64_t b, int64_t len) {
  const int64_t W = x.size(2);
  Tensor out = Tensor::empty({1, len, W}, x.dtype());
  out.copy_from(x.rows(b, 1).view({x.size(1), W}).rows(0, len).view({1, len, W}));
  return out;
}

class PaddedBatchTest : public ::testing::TestWithParam<bool> {};  // parameter: causal

TEST_P(PaddedBatchTest, RealPositionsMatchEachSentenceAlone) {
  const bool causal = GetParam();
  const std::vector<int32_t> lengths = {6, 3, 1};
  const int64_t B = 3, L = 6;
  for (DType dtype : {DType::F64, DType::F32}) {
    // Self-attention over padded sentences: padding rows hold junk that must not leak in.
    Tensor q = random_tensor({B, L, kHeads * kDk}, 1), k = random_tensor({B, L, kHeads * kDk}, 2),
           v = random_tensor({B, L, kHeads * kDv}, 3, -5, 5);
    auto [out, probs] = run(q, k, v, causal, lengths, dtype);
    const double tol = dtype == DType::F64 ? 1e-12 : 1e-5;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n = lengths[b];
      auto [alone, alone_probs] =
          run(sentence(q, b, n), sentence(k, b, n), sentence(v, b, n), causal, {}, dtype);
      const std::vector<double> got = out.to_doubles(), want = alone.to_doubles();
      for (int64_t t = 0; t < n; ++t)
        for (int64_t c = 0; c < kHeads * kDv; ++c)
          EXPECT_NEAR(got[(b * L + t) * kHeads * kDv + c], want[t * kHeads * kDv + c], tol)
              << "sentence " << b << " position " << t << " column " << c << " dtype " << name(dtype);
      // Padding keys get exactly zero weight.
      const std::vector<double> p = probs.to_doubles();
      for (int64_t h = 0; h < kHeads; ++h)
        for (int64_t t = 0; t < L; ++t)
          for (int64_t s = n; s < L; ++s) EXPECT_EQ(p[((b * kHeads + h) * L + t) * L + s], 0.0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Masks, PaddedBatchTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "causal" : "bidirectional"; });

TEST(AttentionMask, CausalWeightsAreZeroAboveTheDiagonal) {
  const int64_t T = 5;
  auto [out, probs] = run(random_tensor({1, T, kHeads * kDk}, 1), random_tensor({1, T, kHeads * kDk}, 2),
                          random_tensor({1, T, kHeads * kDv}, 3), true, {}, DType::F32);
  const std::vector<double> p = probs.to_doubles();
  for (int64_t h = 0; h < kHeads; ++h)
    for (int64_t t = 0; t < T; ++t) {
      double row = 0;
      for (int64_t s = 0; s < T; ++s) {
        const double w = p[(h * T + t) * T + s];
        if (s > t) {
          EXPECT_EQ(w, 0.0) << "query " << t << " sees future key " << s;
        }
        row += w;
      }
      EXPECT_NEAR(row, 1.0, 1e-6);
    }
}

TEST(AttentionMask, CausalWithCachedKeysSeesEveryEarlierKey) {
  // 2 new queries after 4 cached keys (S = 6): query t sees keys s ≤ t + 4.
  auto [out, probs] = run(random_tensor({1, 2, kHeads * kDk}, 1), random_tensor({1, 6, kHeads * kDk}, 2),
                          random_tensor({1, 6, kHeads * kDv}, 3), true, {}, DType::F64);
  const std::vector<double> p = probs.to_doubles();
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t s = 0; s < 6; ++s) {
      const double w = p[t * 6 + s];  // head 0
      if (s <= t + 4) {
        EXPECT_GT(w, 0.0) << t << "," << s;
      } else {
        EXPECT_EQ(w, 0.0) << t << "," << s;
      }
    }
}

// Decoding: one query per entry, beams sharing an entry's keys and values (kv_group), key lengths
// from none to all (covering the kernel's blocks of four keys and their tails), and head widths of
// the float kernel's vector path (1, 2, 4, 8 or 16 vectors of the SIMD build's width: 4, 8 or 16
// floats; 8 to 128 here) and of its plain loops (6 and 24 at every level, 8 at avx512), against a
// direct computation in double.
TEST(AttentionMask, DecodingQueriesMatchADirectComputation) {
  constexpr int64_t H = 2, S = 9;
  for (int64_t width : {6, 8, 16, 24, 32, 64, 128})
    for (int64_t group : {1, 3}) {
      const int64_t B = 6, E = B / group;  // query entries, key/value entries
      const Tensor q = random_tensor({B, 1, H * width}, 11).to(DType::F32),
                   k = random_tensor({E, S, H * width}, 12).to(DType::F32),
                   v = random_tensor({E, S, H * width}, 13).to(DType::F32);
      const std::vector<int32_t> lengths = {0, 1, 4, 5, 7, 9};  // per query entry
      ops::AttentionArgs args;
      args.heads = H;
      args.kv_group = group;
      args.key_lengths = Tensor::from<int32_t>({B}, lengths);
      Tensor probs = Tensor::zeros({B, H, 1, S}), out = Tensor::zeros({B, 1, H * width});
      ops::attention(q, k, v, args, probs, out);
      const std::vector<double> qd = q.to_doubles(), kd = k.to_doubles(), vd = v.to_doubles(),
                                p = probs.to_doubles(), o = out.to_doubles();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
          const int64_t n = lengths[b], e = b / group;
          std::vector<double> w(S, 0.0);
          double max = -1e300, sum = 0;
          for (int64_t s = 0; s < n; ++s) {
            for (int64_t i = 0; i < width; ++i)
              w[s] += qd[b * H * width + h * width + i] * kd[(e * S + s) * H * width + h * width + i];
            w[s] /= std::sqrt(double(width));
            max = std::max(max, w[s]);
          }
          for (int64_t s = 0; s < n; ++s) sum += (w[s] = std::exp(w[s] - max));
          for (int64_t s = 0; s < n; ++s) w[s] /= sum;
          for (int64_t s = 0; s < S; ++s)
            ASSERT_NEAR(p[(b * H + h) * S + s], w[s], 1e-5) << "width " << width << " group " << group << " b " << b;
          for (int64_t i = 0; i < width; ++i) {
            double expect = 0;
            for (int64_t s = 0; s < n; ++s) expect += w[s] * vd[(e * S + s) * H * width + h * width + i];
            ASSERT_NEAR(o[b * H * width + h * width + i], expect, 1e-5)
                << "width " << width << " group " << group << " b " << b << " h " << h << " i " << i;
          }
        }
    }
}

// Runs attention over a decoding cache in slabs k, v [L, R, H·width] with key_rows [B, L], and over
// the same keys and values gathered into rows of their own [B, L, H·width]; expects the two outputs
// and weights bit for bit equal.
void expect_slabs_match_gathered(int64_t H, int64_t width, int64_t L, int64_t R, const std::vector<int32_t>& rows,
                                 const std::vector<int32_t>& lengths, DType dtype) {
  const int64_t B = static_cast<int64_t>(lengths.size()), W = H * width;
  const Tensor q = random_tensor({B, 1, W}, 21).to(dtype), k = random_tensor({L, R, W}, 22).to(dtype),
               v = random_tensor({L, R, W}, 23).to(dtype);
  Tensor kg = Tensor::zeros({B, L, W}, dtype), vg = Tensor::zeros({B, L, W}, dtype);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < L; ++s) {
      kg.rows(b, 1).view({L, W}).rows(s, 1).copy_from(k.rows(s, 1).view({R, W}).rows(rows[b * L + s], 1));
      vg.rows(b, 1).view({L, W}).rows(s, 1).copy_from(v.rows(s, 1).view({R, W}).rows(rows[b * L + s], 1));
    }
  ops::AttentionArgs args;
  args.heads = static_cast<int>(H);
  args.key_lengths = Tensor::from<int32_t>({B}, lengths);
  Tensor want = Tensor::zeros({B, 1, W}, dtype), want_p = Tensor::zeros({B, H, 1, L}, dtype);
  ops::attention(q, kg, vg, args, want_p, want);
  args.key_rows = Tensor::from<int32_t>({B, L}, rows);
  Tensor got = Tensor::zeros({B, 1, W}, dtype), got_p = Tensor::zeros({B, H, 1, L}, dtype);
  ops::attention(q, k, v, args, got_p, got);
  EXPECT_EQ(got.to_doubles(), want.to_doubles()) << "width " << width << " L " << L;
  EXPECT_EQ(got_p.to_doubles(), want_p.to_doubles()) << "width " << width << " L " << L;
  // And against a direct computation in double over the gathered keys (not through the kernel).
  const std::vector<double> qd = q.to_doubles(), kd = kg.to_doubles(), vd = vg.to_doubles(), o = got.to_doubles();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> w(static_cast<size_t>(lengths[b]));
      double max = -1e300, sum = 0;
      for (int64_t s = 0; s < lengths[b]; ++s) {
        double dot = 0;
        for (int64_t i = 0; i < width; ++i) dot += qd[b * W + h * width + i] * kd[(b * L + s) * W + h * width + i];
        max = std::max(max, w[s] = dot / std::sqrt(double(width)));
      }
      for (double& x : w) sum += (x = std::exp(x - max));
      for (int64_t i = 0; i < width; ++i) {
        double expect = 0;
        for (int64_t s = 0; s < lengths[b]; ++s) expect += w[s] / sum * vd[(b * L + s) * W + h * width + i];
        ASSERT_NEAR(o[b * W + h * width + i], expect, 1e-5) << "b " << b << " h " << h << " i " << i << " L " << L;
      }
    }
}

// A decoding cache in slabs (key_rows): each query reads, at each position, the slab row its
// hypothesis names; the result is bit for bit that of the same keys and values gathered into rows
// of their own (whose kernel DecodingQueriesMatchADirectComputation checks), for the float kernel's
// vector path (64) and plain loops (6), float32 and float64, on one thread and, above the kernel's
// threshold for a parallel region, on several (each thread's rows of the next group).
TEST(AttentionMask, SlabCacheRowsMatchTheGatheredKeys) {
  constexpr int64_t H = 2, L = 7, R = 5, B = 4;  // positions, slab rows, hypotheses
  const std::vector<int32_t> rows = {0, 0, 1, 3, 2, 4, 4,  //
                                     1, 1, 1, 0, 2, 0, 0,  //
                                     4, 3, 2, 1, 0, 1, 2,  //
                                     2, 4, 0, 0, 1, 3, 3};
  const std::vector<int32_t> lengths = {7, 5, 6, 1};
  for (int64_t width : {6, 64})
    for (DType dtype : {DType::F32, DType::F64}) expect_slabs_match_gathered(H, width, L, R, rows, lengths, dtype);
  {
    constexpr int64_t B2 = 16, L2 = 64, R2 = 24;  // 16 · 2 · 64 · 128 = 262,144 ≥ 2^16: parallel
    std::vector<int32_t> many(B2 * L2), lens(B2);
    for (int64_t b = 0; b < B2; ++b) {
      lens[b] = static_cast<int32_t>(L2 - 3 * b);
      for (int64_t s = 0; s < L2; ++s) many[b * L2 + s] = static_cast<int32_t>((b * 7 + s * 5 + b * s) % R2);
    }
    expect_slabs_match_gathered(H, 64, L2, R2, many, lens, DType::F32);
  }
  // Rows outside the slabs, a wrong shape, and uses other than decoding are refused.
  const Tensor q = random_tensor({B, 1, H * 8}, 21).to(DType::F32), k = random_tensor({L, R, H * 8}, 22).to(DType::F32);
  Tensor out = Tensor::zeros({B, 1, H * 8}), probs = Tensor::zeros({B, H, 1, L});
  ops::AttentionArgs args;
  args.heads = H;
  std::vector<int32_t> bad = rows;
  bad[9] = 5;
  args.key_rows = Tensor::from<int32_t>({B, L}, bad);
  testing::expect_error([&] { ops::attention(q, k, k, args, probs, out); }, {"key_rows[1, 2] = 5", "[0, 5)"});
  args.key_rows = Tensor::from<int32_t>({B, L - 1}, std::vector<int32_t>(B * (L - 1), 0));
  testing::expect_error([&] { ops::attention(q, k, k, args, probs, out); }, {"key_rows has shape", "[4, 7]"});
  args.key_rows = Tensor::from<int32_t>({B, L}, rows);
  args.dropout = 0.1;
  testing::expect_error([&] { ops::attention(q, k, k, args, probs, out); }, {"for decoding", "dropout 0.1"});
  args.dropout = 0;
  args.kv_group = 2;
  testing::expect_error([&] { ops::attention(q, k, k, args, probs, out); }, {"for decoding", "kv_group 2"});
  args.kv_group = 1;
  const Tensor q2 = random_tensor({B, 2, H * 8}, 24).to(DType::F32);
  Tensor out2 = Tensor::zeros({B, 2, H * 8}), probs2 = Tensor::zeros({B, H, 2, L});
  testing::expect_error([&] { ops::attention(q2, k, k, args, probs2, out2); }, {"for decoding", "got 2 queries"});
  const Tensor v_other = random_tensor({L, R + 1, H * 8}, 25).to(DType::F32);
  testing::expect_error([&] { ops::attention(q, k, v_other, args, probs, out); }, {"different slabs", "[7, 6, 16]"});
}

TEST(AttentionMask, AllMaskedQueriesGiveZerosNotNaN) {
  // Batch entry 1 has no keys at all; entry 0 is causal-masked with 0 keys visible to nobody.
  Tensor q = random_tensor({2, 4, kHeads * kDk}, 1), k = random_tensor({2, 4, kHeads * kDk}, 2),
         v = random_tensor({2, 4, kHeads * kDv}, 3);
  for (DType dtype : {DType::F32, DType::F64}) {
    auto [out, probs] = run(q, k, v, false, {4, 0}, dtype);
    const std::vector<double> o = out.to_doubles(), p = probs.to_doubles();
    for (double x : o) ASSERT_FALSE(std::isnan(x));
    for (size_t i = o.size() / 2; i < o.size(); ++i) EXPECT_EQ(o[i], 0.0);
    for (size_t i = p.size() / 2; i < p.size(); ++i) EXPECT_EQ(p[i], 0.0);

    // The backward of an all-masked query is zero too, and finite.
    ops::AttentionArgs args;
    args.heads = kHeads;
    args.key_lengths = Tensor::from<int32_t>({2}, {4, 0});
    Tensor dq = Tensor::zeros(q.shape(), dtype), dk = Tensor::zeros(k.shape(), dtype),
           dv = Tensor::zeros(v.shape(), dtype);
    ops::attention_backward(q.to(dtype), k.to(dtype), v.to(dtype), args, probs, random_tensor(out.shape(), 4).to(dtype),
                            dq, dk, dv);
    for (const Tensor* g : {&dq, &dk, &dv}) {
      const std::vector<double> x = g->to_doubles();
      for (double e : x) ASSERT_TRUE(std::isfinite(e));
      for (size_t i = x.size() / 2; i < x.size(); ++i) EXPECT_EQ(x[i], 0.0);
    }
  }
}

}  // namespace
}  // namespace tfm
