#include "serve/batcher.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "transformer/translator.h"

namespace tfm::serve {

using Clock = std::chrono::steady_clock;

void BatcherOptions::validate() const {
  TFM_CHECK(max_batch_tokens >= 1, "--max-batch-tokens must be >= 1, got ", max_batch_tokens);
  TFM_CHECK(max_batch_sentences >= 1 && max_batch_sentences <= transformer::kMaxBatchSentences,
            "--max-batch-sentences must be in [1, ", transformer::kMaxBatchSentences, "], got ", max_batch_sentences);
  TFM_CHECK(std::isfinite(max_wait_ms) && max_wait_ms >= 0 && max_wait_ms <= 60000,
            "--max-wait-ms must be in [0, 60000], got ", max_wait_ms);
  TFM_CHECK(max_queue_sentences >= 1, "--queue-size must be >= 1, got ", max_queue_sentences);
  TFM_CHECK(workers >= 1 && workers <= 1024, "--workers must be in [1, 1024], got ", workers);
}

Job::Job(std::string key, std::vector<int64_t> costs)
    : key_(std::move(key)), costs_(std::move(costs)), remaining_(costs_.size()) {}

void Job::wait() {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return remaining_ == 0 || error_; });
  if (error_) std::rethrow_exception(error_);
}

void Job::finish(size_t sentences, std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    remaining_ -= std::min(sentences, remaining_);
    if (error && !error_) error_ = error;
  }
  done_.notify_all();
}

Batcher::Batcher(const BatcherOptions& options, std::function<void(const BatchReport&)> on_batch)
    : options_(options), on_batch_(std::move(on_batch)) {
  options_.validate();
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { work(); });
}

Batcher::~Batcher() { stop(); }

bool Batcher::submit(const std::shared_ptr<Job>& job) {
  if (job->size() == 0) return true;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || static_cast<int64_t>(queue_.size() + job->size()) > options_.max_queue_sentences) return false;
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < job->size(); ++i) queue_.push_back({{job, i}, now});
  }
  wake_.notify_all();
  return true;
}

int64_t Batcher::queued() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(queue_.size());
}

void Batcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

std::vector<Item> Batcher::take(Clock::time_point now, Clock::time_point& wake) {
  std::vector<Item> batch;
  if (queue_.empty()) return batch;
  const std::string& key = queue_.front().item.job->key();
  // Is the oldest sentence's batch full, or has it waited long enough?
  int64_t tokens = 0, sentences = 0;
  bool full = false;
  for (const Waiting& w : queue_) {
    if (w.item.job->key() != key) continue;
    tokens += w.item.job->cost(w.item.index);
    ++sentences;
    if (tokens >= options_.max_batch_tokens || sentences >= options_.max_batch_sentences) {
      full = true;
      break;
    }
  }
  const auto deadline = queue_.front().since + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double, std::milli>(options_.max_wait_ms));
  if (!full && !stopping_ && now < deadline) {
    wake = deadline;
    return batch;
  }
  // Take the oldest sentence, then those of its key in arrival order while they fit.
  tokens = 0;
  const std::string batch_key = key;  // the queue changes below
  std::deque<Waiting> rest;
  for (Waiting& w : queue_) {
    const int64_t cost = w.item.job->cost(w.item.index);
    const bool fits = batch.empty() || (tokens + cost <= options_.max_batch_tokens &&
                                        static_cast<int64_t>(batch.size()) < options_.max_batch_sentences);
    if (w.item.job->key() == batch_key && fits) {
      tokens += cost;
      batch.push_back(std::move(w.item));
    } else {
      rest.push_back(std::move(w));
    }
  }
  queue_.swap(rest);
  return batch;
}

void Batcher::work() {
  std::unique_lock lock(mutex_);
  while (true) {
    Clock::time_point wake = Clock::time_point::max();
    std::vector<Item> batch = take(Clock::now(), wake);
    if (batch.empty()) {
      if (stopping_ && queue_.empty()) return;
      if (wake == Clock::time_point::max()) wake_.wait(lock);
      else wake_.wait_until(lock, wake);
      continue;
    }
    const bool more = !queue_.empty();
    lock.unlock();
    if (more) wake_.notify_one();  // another worker may take the next batch at once
    const Clock::time_point start = Clock::now();
    std::exception_ptr error;
    try {
      batch.front().job->run_batch(batch);
    } catch (...) {
      error = std::current_exception();
    }
    BatchReport report;
    report.sentences = static_cast<int64_t>(batch.size());
    for (const Item& item : batch) report.tokens += item.job->cost(item.index);
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    // Each job's sentences in this batch, counted once per job.
    std::vector<std::pair<Job*, size_t>> counts;
    for (const Item& item : batch) {
      auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == item.job.get(); });
      if (it == counts.end()) counts.emplace_back(item.job.get(), 1);
      else ++it->second;
    }
    if (on_batch_) on_batch_(report);
    for (const auto& [job, n] : counts) job->finish(n, error);
    batch.clear();  // the jobs' last references may go here, outside the lock
    lock.lock();
  }
}

}  // namespace tfm::serve
