#pragma once
// The server's counters, rendered in Prometheus's text exposition format (GET /metrics).
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tfm::serve {

// A Prometheus histogram: cumulative counts of observations at or below each upper bound.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // "name_bucket{labels,le="…"} n" lines, then _sum and _count; `labels` is "" or `a="b",` style.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  // One answered request: its endpoint ("/v1/translate"), status, and seconds from arrival.
  void request(const std::string& endpoint, int status, double seconds);
  // Sentences and tokens of answered translate (or score) requests, per model.
  void sentences(const std::string& model, const std::string& kind, int64_t sentences, int64_t source_tokens,
                 int64_t target_tokens);
  // One decoded batch.
  void batch(int64_t sentences, int64_t tokens, double seconds);
  // The whole exposition; `queue` is the queue length now.
  std::string render(int64_t queue, int64_t queue_capacity) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_;  // per endpoint
  struct Counts {
    uint64_t sentences = 0, source_tokens = 0, target_tokens = 0;
  };
  std::map<std::pair<std::string, std::string>, Counts> counts_;  // (model, kind)
  Histogram batch_sentences_, batch_tokens_, batch_seconds_;
};

}  // namespace tfm::serve
