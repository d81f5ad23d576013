#include "dist/bucket_reducer.h"

#include <algorithm>

#include "core/error.h"

namespace tfm::dist {

BucketReducer::BucketReducer(Communicator& comm, const std::vector<Range>& plan, int64_t n, int64_t bucket_elements,
                             bool threaded, DeviceCommunicator* device)
    : comm_(comm), device_(device), n_(n) {
  TFM_CHECK(bucket_elements >= 1, "BucketReducer: buckets of ", bucket_elements, " elements");
  // Buckets: runs of consecutive plan ranges that touch (a backward pass goes from the last layer
  // down, so each range ends where the one before began), up to about bucket_elements.
  std::vector<std::pair<int64_t, int>> starts;  // (lo, bucket)
  for (const Range& r : plan) {
    TFM_CHECK(0 <= r.lo && r.lo < r.hi && r.hi <= n, "BucketReducer: range [", r.lo, ", ", r.hi, ") of [0, ", n, ")");
    Range* last = buckets_.empty() ? nullptr : &buckets_.back();
    if (last != nullptr && last->hi - last->lo < bucket_elements &&
        (r.hi == last->lo || r.lo == last->hi)) {
      last->lo = std::min(last->lo, r.lo);
      last->hi = std::max(last->hi, r.hi);
      ++entries_.back();
    } else {
      buckets_.push_back(r);
      entries_.push_back(1);
    }
    starts.push_back({r.lo, static_cast<int>(buckets_.size()) - 1});
  }
  // The gaps, ascending, in buckets of their own.
  std::vector<Range> sorted = plan;
  std::sort(sorted.begin(), sorted.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  int64_t at = 0;
  for (const Range& r : sorted) {
    TFM_CHECK(r.lo >= at, "BucketReducer: the plan's ranges overlap at element ", r.lo);
    if (r.lo > at) {
      buckets_.push_back({at, r.lo});
      entries_.push_back(0);
    }
    at = r.hi;
  }
  if (at < n) {
    buckets_.push_back({at, n});
    entries_.push_back(0);
  }
  std::sort(starts.begin(), starts.end());
  for (const auto& [lo, bucket] : starts) {
    plan_lo_.push_back(lo);
    plan_bucket_.push_back(bucket);
  }
  if (device_ != nullptr && !threaded && buckets_.size() > 1) {
    // Summed after the backward pass on a GPU: one bucket for the whole buffer, one NCCL exchange
    // instead of one per layer and gap (the same bits: the sum is element by element).
    const int ranges = static_cast<int>(plan.size());
    buckets_.assign(1, Range{0, n});
    entries_.assign(1, ranges);
    std::fill(plan_bucket_.begin(), plan_bucket_.end(), 0);
  }
  complete_.assign(buckets_.size(), 0);
  if (threaded) thread_ = std::thread([this] { run(); });
}

BucketReducer::~BucketReducer() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void BucketReducer::begin(const Tensor& buffer, int contributors, std::function<void(Range)> prepare) {
  TFM_CHECK(buffer.dtype() == DType::F32 || buffer.dtype() == DType::F64, "BucketReducer: a ", name(buffer.dtype()),
            " buffer");
  TFM_CHECK(buffer.numel() == n_, "BucketReducer: a buffer of ", buffer.numel(), " elements for a plan of ", n_);
  buffer_ = buffer.view({buffer.numel()});
  contributors_ = contributors;
  prepare_ = std::move(prepare);
  std::fill(complete_.begin(), complete_.end(), 0);
  reported_.assign(plan_lo_.size(), 0);
  next_ = 0;
}

void BucketReducer::ready(int64_t lo) {
  const auto it = std::lower_bound(plan_lo_.begin(), plan_lo_.end(), lo);
  TFM_CHECK(it != plan_lo_.end() && *it == lo, "BucketReducer::ready: no range of the plan starts at ", lo);
  const auto index = static_cast<size_t>(it - plan_lo_.begin());
  TFM_CHECK(!reported_[index], "BucketReducer::ready: the range at ", lo, " was reported twice");
  reported_[index] = 1;
  const int bucket = plan_bucket_[index];
  ++complete_[static_cast<size_t>(bucket)];
  submit_ready_buckets();
}

void BucketReducer::submit_ready_buckets() {
  // In the plan's order only, so that every rank sums the same buckets in the same order.
  for (; next_ < buckets_.size() && complete_[next_] == entries_[next_]; ++next_) {
    const Range r = buckets_[next_];
    if (prepare_) prepare_(r);
    if (!thread_.joinable()) continue;  // summed in finish()
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(r);
    }
    wake_.notify_one();
  }
}

void BucketReducer::finish() {
  for (size_t b = 0; b < buckets_.size(); ++b) complete_[b] = entries_[b];
  submit_ready_buckets();
  if (thread_.joinable()) {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
    if (error_) {
      std::exception_ptr e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  } else {
    for (const Range& r : buckets_) reduce(r);
  }
}

void BucketReducer::reduce(Range r) {
  if (buffer_.device() != Device::CPU) {
    TFM_CHECK(device_ != nullptr, "BucketReducer: a buffer on ", name(buffer_.device()), " and no device communicator");
    device_->all_reduce_tree(buffer_.rows(r.lo, r.hi - r.lo), contributors_);
    return;
  }
  if (buffer_.dtype() == DType::F64) comm_.all_reduce_tree(buffer_.data<double>() + r.lo, r.hi - r.lo, contributors_);
  else comm_.all_reduce_tree(buffer_.data<float>() + r.lo, r.hi - r.lo, contributors_);
}

void BucketReducer::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    const Range r = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    try {
      if (!error_) reduce(r);
    } catch (...) {
      error_ = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace tfm::dist
