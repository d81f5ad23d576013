// Data-parallel training's fixed summation order (dist/tree_sum.h): the terms pushed one at a time
// (the last one finishing in place) sum to the same bits as the recursive tree, and a tree cut into runs of a power-of-two length
// (each rank's batches) and then summed over the runs (over the ranks) gives the same bits as the
// whole tree in one process. The ranks themselves are tested through mpirun (cli/mpi_train_test.sh).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "dist/bucket_reducer.h"
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

TEST(TreeSum, FinishedRangeByRangeLikeAtOnce) {
  // Data-parallel training finishes the sum bucket by bucket: the same bits as finish().
  for (int64_t k : {1, 2, 3, 6, 8}) {
    const auto terms = random_terms(k, 300, static_cast<uint32_t>(50 + k));
    dist::TreeSum sum;
    for (size_t t = 0; t + 1 < terms.size(); ++t) sum.push(Tensor::from({300}, terms[t]));
    const Tensor out = Tensor::from({300}, terms.back());
    for (const auto& [lo, hi] : std::vector<std::pair<int64_t, int64_t>>{{200, 300}, {0, 7}, {7, 200}})
      sum.finish_range(out, lo, hi);
    sum.reset();
    EXPECT_TRUE(same_bits(std::vector<float>(out.data<float>(), out.data<float>() + 300), pushed_one_at_a_time(terms)))
        << k << " terms";
  }
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

// Stands in for the ranks: a "sum" over the ranks doubles each element, and the calls are recorded
// (with the thread that made them).
class RecordingComm final : public dist::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string backend() const override { return "recording"; }
  void all_reduce_sum(double*, int64_t) override {}
  void all_reduce_tree(float* data, int64_t n, int) override {
    std::lock_guard<std::mutex> lock(mutex);
    for (int64_t i = 0; i < n; ++i) data[i] *= 2;
    calls.push_back({data - base, data - base + n});
    threads.push_back(std::this_thread::get_id());
    if (fail) throw std::runtime_error("the network went away");
  }
  void all_reduce_tree(double*, int64_t, int) override {}
  void broadcast(void*, int64_t, int) override {}
  bool other_threads_may_call() const override { return true; }
  [[noreturn]] void abort(const std::string& m) override { throw std::runtime_error(m); }

  std::mutex mutex;
  const float* base = nullptr;
  std::vector<std::pair<int64_t, int64_t>> calls;
  std::vector<std::thread::id> threads;
  bool fail = false;
};

TEST(BucketReducer, SumsEveryElementOnceInBucketsOfThePlansOrder) {
  // A buffer of 100: ranges reported from the top down as a backward pass does ([60, 80) then
  // [40, 60) touch; [0, 10) does not), gaps at [10, 40) and [80, 100).
  const std::vector<dist::Range> plan = {{60, 80}, {40, 60}, {0, 10}};
  for (const bool threaded : {false, true}) {
    RecordingComm comm;
    dist::BucketReducer reducer(comm, plan, 100, 30, threaded);
    // Touching ranges merge up to the bucket size (30: [40, 80) is one bucket of 40, reached with
    // its second range); the gaps come last, ascending.
    ASSERT_EQ(reducer.buckets().size(), 4u);
    EXPECT_EQ(reducer.buckets()[0].lo, 40);
    EXPECT_EQ(reducer.buckets()[0].hi, 80);
    EXPECT_EQ(reducer.buckets()[1].lo, 0);
    EXPECT_EQ(reducer.buckets()[2].lo, 10);
    EXPECT_EQ(reducer.buckets()[3].lo, 80);
    for (int step = 0; step < 2; ++step) {
      const Tensor buffer = Tensor::zeros({100});
      for (int64_t i = 0; i < 100; ++i) buffer.data<float>()[i] = static_cast<float>(i);
      comm.base = buffer.data<float>();
      comm.calls.clear();
      comm.threads.clear();
      std::vector<std::pair<int64_t, int64_t>> prepared;
      reducer.begin(buffer, 2, [&](dist::Range r) { prepared.push_back({r.lo, r.hi}); });
      if (step == 0) {  // a rank with a batch; the other step: none, everything in finish()
        reducer.ready(0);   // complete first, but queued only after the bucket before it
        reducer.ready(60);
        EXPECT_TRUE(prepared.empty()) << "a bucket went before all its ranges were complete";
        reducer.ready(40);  // the gaps' buckets, complete from the start, follow at once
        EXPECT_EQ(prepared.size(), 4u);
      }
      reducer.finish();
      const std::vector<std::pair<int64_t, int64_t>> order = {{40, 80}, {0, 10}, {10, 40}, {80, 100}};
      EXPECT_EQ(prepared, order);
      EXPECT_EQ(comm.calls, order) << "threaded " << threaded;
      for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(buffer.data<float>()[i], 2.0f * static_cast<float>(i)) << i;
      for (const auto& id : comm.threads)
        EXPECT_EQ(id == std::this_thread::get_id(), !threaded) << "summed on the wrong thread";
    }
  }
}

TEST(BucketReducer, RefusesBadPlansAndReportsAndPassesOnErrors) {
  RecordingComm comm;
  EXPECT_THROW(dist::BucketReducer(comm, {{0, 10}, {5, 20}}, 100, 10, false), Error);  // overlap
  EXPECT_THROW(dist::BucketReducer(comm, {{0, 200}}, 100, 10, false), Error);          // outside
  dist::BucketReducer reducer(comm, {{0, 10}, {10, 20}}, 100, 100, true);
  const Tensor buffer = Tensor::zeros({100});
  comm.base = buffer.data<float>();
  reducer.begin(buffer, 2);
  EXPECT_THROW(reducer.ready(5), Error);  // no range starts there
  reducer.ready(0);  // half of the one bucket of [0, 20): nothing is summed yet
  EXPECT_THROW(reducer.ready(0), Error);  // twice
  {
    std::lock_guard<std::mutex> lock(comm.mutex);
    comm.fail = true;
  }
  EXPECT_THROW(reducer.finish(), std::runtime_error);  // the thread's error, on the caller's thread
}

}  // namespace
}  // namespace tfm
