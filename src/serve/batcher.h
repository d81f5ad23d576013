#pragma once
// Dynamic batching for the server: requests that arrive one by one from many clients are merged
// into batches, decoded by a pool of workers, and each request gets back exactly its own results.
//
// A request is a Job: its sentences (or sentence pairs), each with a cost in tokens, and a key.
// Sentences of jobs with equal keys (the same model, kind of work and options) may share a batch;
// sentences of one job may be spread over several batches. A worker takes the oldest waiting
// sentence and, with it, the waiting sentences of the same key in arrival order, until the batch
// holds max_batch_tokens tokens or max_batch_sentences sentences; it waits at most max_wait_ms
// after the oldest sentence arrived for the batch to fill (it goes at once when it is full).
// The queue is bounded: a job that would take it past max_queue_sentences is refused (the server
// answers 503), and nothing waits without limit.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tfm::serve {

struct BatcherOptions {
  int64_t max_batch_tokens = 4096;    // a batch's sentences' tokens (one longer sentence goes alone)
  int64_t max_batch_sentences = 256;  // and its sentences
  double max_wait_ms = 5;             // how long the oldest waiting sentence waits for its batch to fill
  int64_t max_queue_sentences = 1024; // sentences waiting, not yet in a batch
  int workers = 1;                    // batches decoded at the same time, each by one worker thread

  // Throws Error naming the first option out of range (with its flag's name).
  void validate() const;
};

class Job;

// One sentence of a job, as a batch holds it.
struct Item {
  std::shared_ptr<Job> job;
  size_t index = 0;  // the sentence's index in its job
};

// A request's sentences. Subclasses hold the inputs and results and decode a batch (run_batch).
class Job {
 public:
  Job(std::string key, std::vector<int64_t> costs);
  virtual ~Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  const std::string& key() const { return key_; }
  size_t size() const { return costs_.size(); }
  int64_t cost(size_t i) const { return costs_[i]; }

  // Decodes a batch: items are sentences of jobs with this job's key (so of this job's type), and
  // writes each one's result into its job. Runs on a worker thread; an exception fails every job
  // with a sentence in the batch.
  virtual void run_batch(const std::vector<Item>& items) = 0;

  // Blocks until every sentence is done or one failed; rethrows the failure.
  void wait();

 private:
  friend class Batcher;
  void finish(size_t sentences, std::exception_ptr error);

  std::string key_;
  std::vector<int64_t> costs_;
  std::mutex mutex_;
  std::condition_variable done_;
  size_t remaining_ = 0;
  std::exception_ptr error_;
};

// What the batcher reports of each batch it decodes (for the server's metrics).
struct BatchReport {
  int64_t sentences = 0, tokens = 0;
  double seconds = 0;  // decoding time
};

class Batcher {
 public:
  explicit Batcher(const BatcherOptions& options, std::function<void(const BatchReport&)> on_batch = {});
  // Finishes every sentence already queued, then stops the workers (as stop()).
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues the job's sentences; false (nothing queued) when the queue has no room for them all, or
  // the batcher is stopping. A job with no sentences is done at once.
  bool submit(const std::shared_ptr<Job>& job);
  // Sentences waiting (not yet taken into a batch).
  int64_t queued() const;
  // Refuses new jobs, lets the workers finish every queued sentence, and joins them.
  void stop();

 private:
  void work();
  // The batch to decode now (empty: none yet; `wake` is when to look again). Under mutex_.
  std::vector<Item> take(std::chrono::steady_clock::time_point now, std::chrono::steady_clock::time_point& wake);

  struct Waiting {
    Item item;
    std::chrono::steady_clock::time_point since;
  };
  const BatcherOptions options_;
  const std::function<void(const BatchReport&)> on_batch_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Waiting> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tfm::serve
