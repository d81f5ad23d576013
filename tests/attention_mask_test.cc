// Masks: a padded batch gives, at every real position, the same outputs as each sentence alone;
// masked keys get exactly zero weight; a query with every key masked gets zeros, never NaN.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/attention.h"
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
