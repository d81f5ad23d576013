#include "serve/metrics.h"

#include <cmath>
#include <cstdio>

namespace tfm::serve {

namespace {

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const std::vector<double> kLatencyBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += name + "_bucket{" + labels + "le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  const std::string braces = labels.empty() ? "" : "{" + labels.substr(0, labels.size() - 1) + "}";
  out += name + "_sum" + braces + " " + number(sum_) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : batch_sentences_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512}),
      batch_tokens_({16, 64, 256, 1024, 2048, 4096, 8192, 16384}),
      batch_seconds_(kLatencyBounds) {}

void Metrics::request(const std::string& endpoint, int status, double seconds) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
  auto it = latency_.find(endpoint);
  if (it == latency_.end()) it = latency_.emplace(endpoint, Histogram(kLatencyBounds)).first;
  it->second.observe(seconds);
}

void Metrics::sentences(const std::string& model, const std::string& kind, int64_t sentences, int64_t source_tokens,
                        int64_t target_tokens) {
  std::lock_guard lock(mutex_);
  Counts& c = counts_[{model, kind}];
  c.sentences += static_cast<uint64_t>(sentences);
  c.source_tokens += static_cast<uint64_t>(source_tokens);
  c.target_tokens += static_cast<uint64_t>(target_tokens);
}

void Metrics::batch(int64_t sentences, int64_t tokens, double seconds) {
  std::lock_guard lock(mutex_);
  batch_sentences_.observe(static_cast<double>(sentences));
  batch_tokens_.observe(static_cast<double>(tokens));
  batch_seconds_.observe(seconds);
}

std::string Metrics::render(int64_t queue, int64_t queue_capacity) const {
  std::lock_guard lock(mutex_);
  std::string out;
  out += "# HELP transformer_requests_total HTTP requests answered, by endpoint and status.\n";
  out += "# TYPE transformer_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    out += "transformer_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
           "\"} " + std::to_string(n) + "\n";
  out += "# HELP transformer_request_duration_seconds Time from a request's arrival to its answer, by endpoint.\n";
  out += "# TYPE transformer_request_duration_seconds histogram\n";
  for (const auto& [endpoint, h] : latency_)
    h.render(out, "transformer_request_duration_seconds", "endpoint=\"" + endpoint + "\",");
  const char* names[3] = {"sentences", "source_tokens", "target_tokens"};
  const char* help[3] = {"Sentences (or sentence pairs) answered", "Source tokens of the sentences answered",
                         "Target tokens produced (translate) or scored (score)"};
  for (int k = 0; k < 3; ++k) {
    const std::string name = std::string("transformer_") + names[k] + "_total";
    out += "# HELP " + name + " " + help[k] + ", by model and kind of work.\n";
    out += "# TYPE " + name + " counter\n";
    for (const auto& [key, c] : counts_) {
      const uint64_t v = k == 0 ? c.sentences : k == 1 ? c.source_tokens : c.target_tokens;
      out += name + "{model=\"" + key.first + "\",kind=\"" + key.second + "\"} " + std::to_string(v) + "\n";
    }
  }
  out += "# HELP transformer_batch_sentences Sentences per decoded batch.\n";
  out += "# TYPE transformer_batch_sentences histogram\n";
  batch_sentences_.render(out, "transformer_batch_sentences", "");
  out += "# HELP transformer_batch_tokens Tokens per decoded batch (translate: source tokens; score: source and target).\n";
  out += "# TYPE transformer_batch_tokens histogram\n";
  batch_tokens_.render(out, "transformer_batch_tokens", "");
  out += "# HELP transformer_batch_duration_seconds Decoding time per batch.\n";
  out += "# TYPE transformer_batch_duration_seconds histogram\n";
  batch_seconds_.render(out, "transformer_batch_duration_seconds", "");
  out += "# HELP transformer_queue_sentences Sentences waiting for a batch.\n";
  out += "# TYPE transformer_queue_sentences gauge\n";
  out += "transformer_queue_sentences " + std::to_string(queue) + "\n";
  out += "# HELP transformer_queue_capacity_sentences The queue's limit (--queue-size).\n";
  out += "# TYPE transformer_queue_capacity_sentences gauge\n";
  out += "transformer_queue_capacity_sentences " + std::to_string(queue_capacity) + "\n";
  return out;
}

}  // namespace tfm::serve
