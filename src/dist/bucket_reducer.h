#pragma once
// Sums a flat gradient buffer over the ranks while the backward pass that fills it still runs.
// The buffer's ranges come in a fixed plan, in the order a backward pass completes
// them (Transformer::grads_done_order); consecutive ranges that touch are gathered into buckets of
// about `bucket_elements`, and what no range covers (gaps between parameters) ends the plan. As the
// pass reports ranges complete (Context::grads_done), a thread of the reducer's own sums each bucket
// whose ranges are all complete (the gaps are, from the start) with Communicator::all_reduce_tree, while the caller's threads
// compute the layers below. Every rank sums the same buckets in the same order (a rank without a
// batch in a step sums them all in finish()), and the sums are the same bits as one all-reduce of
// the whole buffer: the fixed order of dist/tree_sum.h is element by element.
//
// MPI calls come from the reducer's thread between begin() and finish(), from the caller's thread
// otherwise, never from both at once (MPI_THREAD_SERIALIZED).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "dist/communicator.h"
#include "dist/device_communicator.h"

namespace tfm::dist {

struct Range {
  int64_t lo = 0, hi = 0;  // elements [lo, hi)
};

class BucketReducer {
 public:
  // `plan`: disjoint ranges of a buffer of `n` elements, in the order they complete. With
  // `threaded` false, every bucket is summed in finish() (no overlap).
  // A buffer on a GPU is summed by `device` (NCCL) instead of `comm`.
  BucketReducer(Communicator& comm, const std::vector<Range>& plan, int64_t n, int64_t bucket_elements, bool threaded,
                DeviceCommunicator* device = nullptr);
  ~BucketReducer();
  BucketReducer(const BucketReducer&) = delete;
  BucketReducer& operator=(const BucketReducer&) = delete;

  // A step's reduction of `buffer` ([n], F32 or F64) over ranks 0 .. contributors − 1. `prepare`,
  // when set, runs on the caller's thread on each bucket just before it is queued (a rank summing
  // several batches adds the earlier ones' gradients there).
  void begin(const Tensor& buffer, int contributors, std::function<void(Range)> prepare = {});
  // The plan's range that starts at `lo` is complete on this rank.
  void ready(int64_t lo);
  // Completes the rest of the plan, waits until every bucket is summed, rethrows the first error.
  void finish();

  const std::vector<Range>& buckets() const { return buckets_; }

 private:
  void submit_ready_buckets();
  void reduce(Range r);
  void run();  // the thread

  Communicator& comm_;
  DeviceCommunicator* device_;
  const int64_t n_;
  std::vector<Range> buckets_;        // in the order they are summed
  std::vector<int> entries_;          // plan ranges per bucket (0 for the gaps' buckets)
  std::vector<int64_t> plan_lo_;      // the plan's ranges' starts, sorted, and
  std::vector<int> plan_bucket_;      // the bucket of each
  std::vector<char> reported_;        // per plan range (as plan_lo_): reported this step
  std::vector<int> complete_;         // per bucket: its ranges reported this step
  size_t next_ = 0;                   // the next bucket to queue
  Tensor buffer_;
  int contributors_ = 1;
  std::function<void(Range)> prepare_;

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Range> queue_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace tfm::dist
