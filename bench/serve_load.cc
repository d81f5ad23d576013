// A bounded load client for `transformer serve` (scripts/serve_load.sh, docs/performance.md):
// N clients, each on its own keep-alive connection, send one sentence per request for a fixed time
// and check every answer against the offline translation of the same sentence.
//
//   serve_load --port P --source val.en --expected val.hyp [--clients 64] [--seconds 60] [--beam 4]
//
// Client c sends sentences c, c + N, c + 2N, … (wrapping), so together they cycle through the file.
// Prints one JSON line: requests, answers by status, mismatches (a 200 whose text is not the offline
// translation of its own input), sentences per second, and latency percentiles of the 200s.
// Exit status 1 when an answer mismatched or a request failed without an HTTP status.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("load for transformer serve: many clients, each answer checked");
  int port = 8080, clients = 64, beam = 4;
  double seconds = 60;
  std::string host = "127.0.0.1", source, expected;
  app.add_option("--host", host)->capture_default_str();
  app.add_option("--port", port)->required();
  app.add_option("--source", source, "sentences, one per line")->required();
  app.add_option("--expected", expected, "the offline translation of each line")->required();
  app.add_option("--clients", clients)->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--seconds", seconds)->capture_default_str()->check(CLI::Range(0.1, 3600.0));
  app.add_option("--beam", beam)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::vector<std::string> src = read_lines(source), want = read_lines(expected);
  if (src.size() != want.size() || src.empty()) {
    std::fprintf(stderr, "serve_load: %zu source lines but %zu expected lines\n", src.size(), want.size());
    return 2;
  }
  std::mutex mutex;
  std::map<int, int64_t> statuses;  // -1: no HTTP answer
  std::vector<double> latencies;    // seconds, of the 200s
  int64_t mismatches = 0, sentences = 0;
  std::string first_mismatch, first_error;  // the first request without an HTTP answer: why
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      httplib::Client client(host, port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(120);
      std::map<int, int64_t> my_statuses;
      std::vector<double> my_latencies;
      int64_t my_mismatches = 0, my_sentences = 0;
      std::string my_first, my_first_error;
      for (size_t i = static_cast<size_t>(c) % src.size(); Clock::now() < end; i = (i + clients) % src.size()) {
        if (src[i].find_first_not_of(" \t\r") == std::string::npos) continue;  // the server refuses empty texts
        const std::string body = nlohmann::json{{"text", {src[i]}}, {"beam", beam}}.dump();
        const Clock::time_point sent = Clock::now();
        auto r = client.Post("/v1/translate", body, "application/json");
        const double latency = std::chrono::duration<double>(Clock::now() - sent).count();
        if (!r) {
          ++my_statuses[-1];
          if (my_first_error.empty()) my_first_error = httplib::to_string(r.error());
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        ++my_statuses[r->status];
        if (r->status == 200) {
          my_latencies.push_back(latency);
          ++my_sentences;
          const std::string text = nlohmann::json::parse(r->body)["translations"][0]["text"];
          if (text != want[i]) {
            if (my_first.empty()) my_first = "line " + std::to_string(i + 1) + ": got '" + text + "', offline '" + want[i] + "'";
            ++my_mismatches;
          }
        } else if (r->status == 503) {
          // Retry-After is in seconds; a load test retries sooner to keep the pressure on.
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
      std::lock_guard lock(mutex);
      for (const auto& [s, n] : my_statuses) statuses[s] += n;
      latencies.insert(latencies.end(), my_latencies.begin(), my_latencies.end());
      mismatches += my_mismatches;
      sentences += my_sentences;
      if (first_mismatch.empty()) first_mismatch = my_first;
      if (first_error.empty()) first_error = my_first_error;
    });
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  nlohmann::json out;
  int64_t requests = 0;
  nlohmann::json by_status = nlohmann::json::object();
  for (const auto& [s, n] : statuses) {
    requests += n;
    by_status[s < 0 ? "no answer" : std::to_string(s)] = n;
  }
  out["clients"] = clients;
  out["seconds"] = elapsed;
  out["requests"] = requests;
  out["statuses"] = by_status;
  out["mismatches"] = mismatches;
  if (!first_mismatch.empty()) out["first_mismatch"] = first_mismatch;
  if (!first_error.empty()) out["first_error"] = first_error;
  out["sentences_per_second"] = static_cast<double>(sentences) / elapsed;
  out["latency_ms"] = {{"p50", percentile(latencies, 0.5) * 1e3},
                       {"p90", percentile(latencies, 0.9) * 1e3},
                       {"p99", percentile(latencies, 0.99) * 1e3},
                       {"max", latencies.empty() ? 0.0 : *std::max_element(latencies.begin(), latencies.end()) * 1e3}};
  std::printf("%s\n", out.dump().c_str());
  return mismatches > 0 || statuses.count(-1) ? 1 : 0;
}
