// Data-parallel training's fixed summation order (dist/tree_sum.h): the terms pushed one at a time
// (the last one finishing in place) sum to the same bits as the recursive tree, and a tree cut into runs of a power-of-two length
// (each rank's batches) and then summed over the runs (over the ranks) gives the same bits as the
// whole tree in one process. The ranks themselves are tested through mpirun (cli/mpi_train_test.sh).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "dist/communicator.h"
#include "dist/tree_sum.h"

namespace tfm {
namespace {

// k terms of n floats whose magnitudes span 2^-20 .. 2^20, so that the grouping changes the bits.
std::vector<std::vector<float>> random_terms(int64_t k, int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<std::vector<float>> terms(static_cast<size_t>(k), std::vector<float>(static_cast<size_t>(n)));
  for (auto& t : terms)
    for (float& x : t) x = std::ldexp(mantissa(gen), exponent(gen));
  return terms;
}

std::vector<float> recursive_tree(std::vector<std::vector<float>> terms) {
  std::vector<float*> p;
  for (auto& t : terms) p.push_back(t.data());
  dist::tree_sum(p.data(), static_cast<int64_t>(p.size()), static_cast<int64_t>(terms[0].size()));
  return terms[0];
}

std::vector<float> pushed_one_at_a_time(const std::vector<std::vector<float>>& terms) {
  dist::TreeSum sum;
  const auto n = static_cast<int64_t>(terms[0].size());
  for (size_t t = 0; t + 1 < terms.size(); ++t) sum.push(Tensor::from({n}, terms[t]));
  const Tensor out = Tensor::from({n}, terms.back());
  sum.finish(out);
  return std::vector<float>(out.data<float>(), out.data<float>() + n);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(TreeSum, SplitsAtTheLargestPowerOfTwoBelow) {
  EXPECT_EQ(dist::tree_split(2), 1);
  EXPECT_EQ(dist::tree_split(3), 2);
  EXPECT_EQ(dist::tree_split(4), 2);
  EXPECT_EQ(dist::tree_split(5), 4);
  EXPECT_EQ(dist::tree_split(8), 4);
  EXPECT_EQ(dist::tree_split(9), 8);
}

TEST(TreeSum, TermsPushedOneAtATimeSumLikeTheTree) {
  for (int64_t k = 1; k <= 13; ++k) {
    const auto terms = random_terms(k, 257, static_cast<uint32_t>(k));
    EXPECT_TRUE(same_bits(pushed_one_at_a_time(terms), recursive_tree(terms))) << k << " terms";
  }
  // The grouping matters for these terms: a sum from left to right differs from the tree, so the
  // comparisons above can fail.
  const auto terms = random_terms(7, 257, 7);
  std::vector<float> left_to_right = terms[0];
  for (size_t t = 1; t < terms.size(); ++t)
    for (size_t i = 0; i < left_to_right.size(); ++i) left_to_right[i] += terms[t][i];
  EXPECT_FALSE(same_bits(left_to_right, recursive_tree(terms)));
}

TEST(TreeSum, RunsOfAPowerOfTwoThenTheirSumsGiveTheWholeTree) {
  // n batches in a step, `a` to each rank (the last rank's run may be shorter, or absent): each rank
  // sums its run, then the runs' sums are summed over the ranks. Equal to one process's tree when
  // `a` is a power of two; not in general otherwise.
  for (const int64_t a : {1, 2, 4, 8})
    for (int64_t n = 1; n <= 17; ++n) {
      const auto terms = random_terms(n, 129, static_cast<uint32_t>(100 * a + n));
      std::vector<std::vector<float>> runs;
      for (int64_t begin = 0; begin < n; begin += a) {
        const std::vector<std::vector<float>> run(terms.begin() + begin, terms.begin() + std::min(n, begin + a));
        runs.push_back(pushed_one_at_a_time(run));
      }
      EXPECT_TRUE(same_bits(recursive_tree(runs), recursive_tree(terms))) << n << " terms in runs of " << a;
    }
  bool any_differs = false;
  for (int64_t n = 4; n <= 12 && !any_differs; ++n) {
    const auto terms = random_terms(n, 129, static_cast<uint32_t>(n));
    std::vector<std::vector<float>> runs;
    for (int64_t begin = 0; begin < n; begin += 3)
      runs.push_back(recursive_tree({terms.begin() + begin, terms.begin() + std::min(n, begin + 3)}));
    any_differs = !same_bits(recursive_tree(runs), recursive_tree(terms));
  }
  EXPECT_TRUE(any_differs) << "runs of 3 happened to sum like the whole tree";
}

TEST(Communicator, OneProcessWithoutALauncher) {
  // ctest starts this program without mpirun: one process of rank 0, whose reductions are no-ops.
  dist::Communicator& world = dist::world();
  EXPECT_EQ(world.size(), 1);
  EXPECT_EQ(world.rank(), 0);
  EXPECT_TRUE(world.is_root());
  std::vector<float> x = {1.5f, -2.0f};
  world.all_reduce_tree(x.data(), 2, 1);
  EXPECT_EQ(x, (std::vector<float>{1.5f, -2.0f}));
  std::string s = "unchanged";
  world.broadcast(s, 0);
  EXPECT_EQ(s, "unchanged");
}

}  // namespace
}  // namespace tfm
