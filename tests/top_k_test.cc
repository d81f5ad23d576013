// ops::top_k_logprobs (beam search's selection) against sorting: the k best log-probabilities of
// each row with their ids, ties to the lower id, banned ids skipped, and the log-sum-exp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "ops/top_k.h"

namespace tfm {
namespace {

TEST(TopK, MatchesSortingWithTiesAndBannedIds) {
  std::mt19937 gen(3);
  for (int64_t V : {1, 2, 63, 64, 65, 129, 1000, 5000}) {
    for (int64_t k : {1, 3, 8}) {
      const int64_t R = 5;
      std::vector<float> z(static_cast<size_t>(R * V));
      // Few distinct values: many ties. Row 1 ascends, so every block can improve the list.
      std::uniform_int_distribution<int> level(-20, 20);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t v = 0; v < V; ++v) z[r * V + v] = r == 1 ? 0.01f * v : 0.25f * level(gen);
      std::vector<int32_t> banned;
      if (V > 2) banned = {0, static_cast<int32_t>(V / 2)};
      Tensor logits = Tensor::from<float>({R, V}, z);
      Tensor logp = Tensor::empty({R, k}, DType::F64), ids = Tensor::empty({R, k}, DType::I32), lse = Tensor::empty({R}, DType::F64);
      ops::top_k_logprobs(logits, k, banned, logp, ids, lse);
      for (int64_t r = 0; r < R; ++r) {
        SCOPED_TRACE(::testing::Message() << "V " << V << ", k " << k << ", row " << r);
        const float* row = z.data() + r * V;
        double m = *std::max_element(row, row + V), sum = 0;
        for (int64_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - m);
        const double want_lse = m + std::log(sum);
        EXPECT_NEAR(lse.data<double>()[r], want_lse, 1e-5);
        std::vector<int32_t> order;
        for (int64_t v = 0; v < V; ++v)
          if (std::find(banned.begin(), banned.end(), v) == banned.end()) order.push_back(static_cast<int32_t>(v));
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
        for (int64_t j = 0; j < k; ++j) {
          if (j < static_cast<int64_t>(order.size())) {
            EXPECT_EQ(ids.data<int32_t>()[r * k + j], order[j]) << "rank " << j;
            EXPECT_NEAR(logp.data<double>()[r * k + j], row[order[j]] - want_lse, 1e-5) << "rank " << j;
          } else {
            EXPECT_EQ(ids.data<int32_t>()[r * k + j], -1) << "rank " << j;
          }
        }
      }
    }
  }
}

// Logits of −inf (masked) in the row's first blocks: they add nothing to the sum and rank last.
TEST(TopK, LeadingMinusInfinityLeavesTheSumFinite) {
  const int64_t V = 200;
  std::vector<float> z(V, -std::numeric_limits<float>::infinity());
  for (int64_t v = 130; v < V; ++v) z[v] = 0.1f * static_cast<float>(v % 7);
  Tensor logp = Tensor::empty({1, 2}, DType::F64), ids = Tensor::empty({1, 2}, DType::I32), lse = Tensor::empty({1}, DType::F64);
  ops::top_k_logprobs(Tensor::from<float>({1, V}, z), 2, {}, logp, ids, lse);
  double sum = 0;
  for (int64_t v = 130; v < V; ++v) sum += std::exp(double(z[v]));
  EXPECT_NEAR(lse.data<double>()[0], std::log(sum), 1e-5);
  EXPECT_EQ(ids.data<int32_t>()[0], 132);  // the first id with the largest value, 0.6
  EXPECT_NEAR(logp.data<double>()[0], 0.6 - std::log(sum), 1e-5);
}

// A NaN logit (a broken model) is never selected, wherever it stands, in float32 and float64; the
// others keep their order (before, a NaN entered the list and stopped better values moving up).
TEST(TopK, NaNIsNeverSelected) {
  const int64_t V = 100, k = 3;
  for (const int64_t at : {int64_t{0}, int64_t{1}, int64_t{6}, int64_t{99}}) {
    std::vector<double> z(static_cast<size_t>(V));
    for (int64_t v = 0; v < V; ++v) z[v] = static_cast<double>(v % 7);
    z[at] = std::numeric_limits<double>::quiet_NaN();
    // The three best: the first ids whose value is 6, none of them `at`.
    std::vector<int32_t> want;
    for (int32_t v = 6; static_cast<int64_t>(want.size()) < k; v += 7)
      if (v != at) want.push_back(v);
    for (const DType dtype : {DType::F32, DType::F64}) {
      SCOPED_TRACE(::testing::Message() << "NaN at " << at << ", " << name(dtype));
      Tensor logp = Tensor::empty({1, k}, DType::F64), ids = Tensor::empty({1, k}, DType::I32),
             lse = Tensor::empty({1}, DType::F64);
      ops::top_k_logprobs(Tensor::from<double>({1, V}, z).to(dtype), k, {}, logp, ids, lse);
      EXPECT_EQ(std::vector<int32_t>(ids.data<int32_t>(), ids.data<int32_t>() + k), want);
    }
  }
}

}  // namespace
}  // namespace tfm
