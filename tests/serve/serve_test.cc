// The server (src/serve): the batcher on its own, with jobs that record their batches, then the
// HTTP API in-process on a free port, every endpoint and every error, against the tiny model.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "serve/batcher.h"
#include "serve/server.h"
#include "testing/errors.h"
#include "testing/fixture.h"
#include "transformer/translator.h"

namespace tfm::serve {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// A job whose "decoding" squares each input, and that records every batch it was part of.
struct Log {
  std::mutex mutex;
  std::vector<std::vector<std::pair<std::string, int64_t>>> batches;  // per batch: (key, input) of each item
};

class SquareJob : public Job {
 public:
  SquareJob(std::string key, std::vector<int64_t> inputs, Log& log, std::vector<int64_t> costs = {})
      : Job(key, costs.empty() ? std::vector<int64_t>(inputs.size(), 1) : costs), inputs(std::move(inputs)),
        results(this->inputs.size(), -1), log(log) {}
  void run_batch(const std::vector<Item>& items) override {
    std::vector<std::pair<std::string, int64_t>> seen;
    for (const Item& item : items) {
      auto& job = static_cast<SquareJob&>(*item.job);
      if (job.inputs[item.index] < 0) throw Error("a negative input");
      job.results[item.index] = job.inputs[item.index] * job.inputs[item.index];
      seen.emplace_back(job.key(), job.inputs[item.index]);
    }
    std::lock_guard lock(log.mutex);
    log.batches.push_back(seen);
  }
  std::vector<int64_t> inputs, results;
  Log& log;
};

TEST(Batcher, ConcurrentJobsShareBatchesAndEachGetsItsOwnResults) {
  Log log;
  BatcherOptions o;
  o.max_batch_sentences = 8;
  o.max_wait_ms = 20;
  o.workers = 2;
  Batcher batcher(o);
  std::vector<std::thread> clients;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 16; ++c)
    clients.emplace_back([&, c] {
      for (int r = 0; r < 5; ++r) {
        std::vector<int64_t> inputs;
        for (int i = 0; i <= r; ++i) inputs.push_back(c * 100 + r * 10 + i);
        auto job = std::make_shared<SquareJob>(c % 2 ? "odd" : "even", inputs, log);
        ASSERT_TRUE(batcher.submit(job));
        job->wait();
        for (size_t i = 0; i < inputs.size(); ++i)
          if (job->results[i] != inputs[i] * inputs[i]) ++wrong;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(wrong, 0);
  size_t items = 0, merged = 0;
  for (const auto& batch : log.batches) {
    items += batch.size();
    EXPECT_LE(batch.size(), 8u);
    std::set<std::string> keys;
    std::set<int64_t> clients_in_batch;
    for (const auto& [key, input] : batch) {
      keys.insert(key);
      clients_in_batch.insert(input / 100);
    }
    EXPECT_EQ(keys.size(), 1u) << "a batch mixed keys";
    if (clients_in_batch.size() > 1) ++merged;
  }
  EXPECT_EQ(items, 16u * (1 + 2 + 3 + 4 + 5));
  EXPECT_GT(merged, 0u) << "no batch held sentences of two requests";
}

TEST(Batcher, BatchesStopAtTheTokenLimitAndALongSentenceGoesAlone) {
  Log log;
  BatcherOptions o;
  o.max_batch_tokens = 10;
  o.max_wait_ms = 50;
  o.workers = 1;
  Batcher batcher(o);
  auto job = std::make_shared<SquareJob>("k", std::vector<int64_t>{1, 2, 3, 4, 5}, log,
                                         std::vector<int64_t>{4, 4, 4, 30, 1});
  ASSERT_TRUE(batcher.submit(job));
  job->wait();
  EXPECT_EQ(job->results, (std::vector<int64_t>{1, 4, 9, 16, 25}));
  // In arrival order, what fits: 4 + 4, not the third 4 (12 > 10) nor the 30, but the last 1.
  // The older sentences left behind are first in the queue, so they go next: the 4, then the 30
  // alone (a sentence over the limit still goes, on its own).
  ASSERT_EQ(log.batches.size(), 3u);
  auto inputs_of = [&](size_t b) {
    std::vector<int64_t> v;
    for (const auto& item : log.batches[b]) v.push_back(item.second);
    return v;
  };
  EXPECT_EQ(inputs_of(0), (std::vector<int64_t>{1, 2, 5}));
  EXPECT_EQ(inputs_of(1), (std::vector<int64_t>{3}));
  EXPECT_EQ(inputs_of(2), (std::vector<int64_t>{4}));
}

TEST(Batcher, ALoneSentenceWaitsAtMostMaxWait) {
  Log log;
  BatcherOptions o;
  o.max_wait_ms = 100;
  Batcher batcher(o);
  const auto start = std::chrono::steady_clock::now();
  auto job = std::make_shared<SquareJob>("k", std::vector<int64_t>{3}, log);
  ASSERT_TRUE(batcher.submit(job));
  job->wait();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(ms, 90);
  EXPECT_LT(ms, 5000);
  EXPECT_EQ(job->results[0], 9);
}

TEST(Batcher, AFullQueueRefusesAndAFailedBatchFailsOnlyItsJobs) {
  Log log;
  BatcherOptions o;
  o.max_queue_sentences = 3;
  o.max_wait_ms = 300;  // the first job waits in the queue meanwhile
  o.workers = 1;
  Batcher batcher(o);
  auto first = std::make_shared<SquareJob>("a", std::vector<int64_t>{1, 2}, log);
  auto second = std::make_shared<SquareJob>("a", std::vector<int64_t>{1, 2}, log);
  ASSERT_TRUE(batcher.submit(first));
  EXPECT_FALSE(batcher.submit(second));  // 2 + 2 > 3
  EXPECT_EQ(batcher.queued(), 2);
  auto bad = std::make_shared<SquareJob>("b", std::vector<int64_t>{-1}, log);
  ASSERT_TRUE(batcher.submit(bad));
  first->wait();
  EXPECT_EQ(first->results, (std::vector<int64_t>{1, 4}));
  testing::expect_error([&] { bad->wait(); }, {"a negative input"});
}

TEST(Batcher, StopFinishesWhatIsQueuedAndRefusesMore) {
  Log log;
  BatcherOptions o;
  o.max_wait_ms = 60000;  // only stop() sends this batch
  Batcher batcher(o);
  auto job = std::make_shared<SquareJob>("k", std::vector<int64_t>{7, 8}, log);
  ASSERT_TRUE(batcher.submit(job));
  batcher.stop();
  job->wait();
  EXPECT_EQ(job->results, (std::vector<int64_t>{49, 64}));
  EXPECT_FALSE(batcher.submit(std::make_shared<SquareJob>("k", std::vector<int64_t>{1}, log)));
}

TEST(Batcher, OptionsOutOfRangeAreNamed) {
  BatcherOptions o;
  o.max_wait_ms = -1;
  testing::expect_error([&] { o.validate(); }, {"--max-wait-ms", "-1"});
  o = {};
  o.workers = 0;
  testing::expect_error([&] { o.validate(); }, {"--workers", "0"});
  o = {};
  o.max_batch_sentences = 100000;
  testing::expect_error([&] { o.validate(); }, {"--max-batch-sentences", "100000"});
}

const std::string kModel = std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors";

std::vector<std::string> inputs() {
  std::ifstream in(std::string(TFM_FIXTURE_DIR) + "/tiny_model/input.en");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// A server on a free port of 127.0.0.1, listening on its own thread for the test's lifetime.
class Running {
 public:
  explicit Running(ServerOptions o) {
    if (o.models.empty()) o.models.push_back(parse_model_spec("tiny=" + kModel));
    o.port = 0;
    server = std::make_unique<Server>(o);
    port = server->bind();
    thread = std::thread([this] { server->listen(); });
  }
  ~Running() {
    server->stop();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60);
    return c;
  }
  httplib::Result post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) const {
    return client().Post(path.c_str(), headers, body, "application/json");
  }
  json post_json(const std::string& path, const json& body, int status = 200) const {
    auto r = post(path, body.dump());
    EXPECT_TRUE(r) << httplib::to_string(r.error());
    if (!r) return {};
    EXPECT_EQ(r->status, status) << r->body;
    return json::parse(r->body);
  }
  // Polls GET /health until the queue holds `sentences` (true), for at most 10 s (false).
  bool wait_until_queued(int64_t sentences) const {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < until) {
      auto health = client().Get("/health");
      if (health && health->status == 200 && json::parse(health->body)["queue"].get<int64_t>() >= sentences) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
  std::unique_ptr<Server> server;
  int port = 0;
  std::thread thread;
};

ServerOptions two_workers() {
  ServerOptions o;
  o.batching.workers = 2;
  o.batching.max_wait_ms = 10;
  return o;
}

// Every answer equals the library's own translation of the same sentence (the offline path), for
// many clients at once: no request ever gets another's result.
TEST(Server, ConcurrentClientsEachGetTheirOwnTranslations) {
  const Running s(two_workers());
  const std::vector<std::string> lines = inputs();
  const transformer::Translator t(kModel);
  transformer::TranslateOptions o;
  const std::vector<transformer::Translation> offline = t.translate(lines, o);
  std::atomic<int> checked{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 12; ++c)
    clients.emplace_back([&, c] {
      httplib::Client client = s.client();
      for (size_t i = static_cast<size_t>(c % 3); i < lines.size(); i += 3) {  // each line by 4 clients
        auto r = client.Post("/v1/translate", json{{"text", {lines[i]}}, {"scores", true}}.dump(), "application/json");
        if (!r || r->status != 200) {
          ++wrong;
          continue;
        }
        const json j = json::parse(r->body);
        const auto& got = j["translations"][0];
        if (got["text"] != offline[i].best().text || std::abs(got["score"].get<double>() - offline[i].best().normalized) > 1e-4)
          ++wrong;
        ++checked;
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(checked, static_cast<int>(4 * lines.size()));
  // The metrics saw batches of more than one sentence. A request is counted after its answer is
  // sent (httplib's logger), so the last one may be counted a moment after its client got it.
  const std::string counted = "transformer_requests_total{endpoint=\"/v1/translate\",status=\"200\"} " +
                              std::to_string(4 * lines.size());
  std::string body;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto m = s.client().Get("/metrics");
    ASSERT_TRUE(m);
    body = m->body;
    if (body.find(counted) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(body.find("transformer_batch_sentences_bucket{le=\"1\"}"), std::string::npos);
  EXPECT_NE(body.find(counted), std::string::npos) << body;
}

TEST(Server, TranslateGivesNBestScoresAndAttention) {
  const Running s(two_workers());
  const std::vector<std::string> lines = inputs();
  const transformer::Translator t(kModel);
  transformer::TranslateOptions o;
  o.search.beam_size = 3;
  o.search.n_best = 3;
  o.search.length_penalty = 1.0;
  o.search.record_attention = true;
  const std::vector<std::string> some(lines.begin(), lines.begin() + 3);
  const auto offline = t.translate(some, o);
  const json j = s.post_json("/v1/translate", {{"text", some}, {"beam", 3}, {"n_best", 3}, {"length_penalty", 1.0},
                                               {"attention", true}});
  EXPECT_EQ(j["model"], "tiny");
  ASSERT_EQ(j["translations"].size(), 3u);
  for (size_t i = 0; i < some.size(); ++i) {
    const json& tr = j["translations"][i];
    EXPECT_EQ(tr["text"], offline[i].best().text);
    EXPECT_FALSE(tr.contains("score"));  // only with "scores": true
    ASSERT_EQ(tr["hypotheses"].size(), offline[i].hypotheses.size());
    EXPECT_EQ(tr["source_tokens"].size(), offline[i].source_ids.size() + 1);
    for (size_t h = 0; h < offline[i].hypotheses.size(); ++h) {
      const auto& want = offline[i].hypotheses[h];
      const json& got = tr["hypotheses"][h];
      EXPECT_EQ(got["text"], want.text);
      EXPECT_NEAR(got["score"].get<double>(), want.normalized, 1e-4);
      EXPECT_EQ(got["target_tokens"].size(), want.ids.size() + 1);
      EXPECT_EQ(got["target_tokens"].back(), "</s>");
      const json& a = got["attention"];  // [layer][head][target][source]
      ASSERT_EQ(a.size(), static_cast<size_t>(want.attention.layers));
      ASSERT_EQ(a[0].size(), static_cast<size_t>(want.attention.heads));
      ASSERT_EQ(a[0][0].size(), static_cast<size_t>(want.attention.target_length));
      ASSERT_EQ(a[0][0][0].size(), static_cast<size_t>(want.attention.source_length));
      const int64_t last = want.attention.layers - 1;
      EXPECT_NEAR(a[last][1][0][0].get<double>(), want.attention.at(last, 1, 0, 0), 1e-4);
      double row = 0;
      for (const auto& w : a[0][0][0]) row += w.get<double>();
      EXPECT_NEAR(row, 1.0, 1e-3);
    }
  }
}

TEST(Server, ScoreAgreesWithTheLibrary) {
  const Running s(two_workers());
  transformer::TranslatorOptions plain;
  plain.weights = transformer::TranslatorOptions::Weights::kPlain;
  const transformer::Translator t(kModel, plain);
  // An empty target is scored as `transformer score` scores it: its end of sentence alone.
  const std::vector<std::string> src = {"three hundred forty-two", "one", "two"},
                                 tgt = {"dreihundertzweiundvierzig", "zwei", " "};
  const auto want = t.score(src, tgt);
  EXPECT_EQ(want[2].tokens, 1);
  const json j = s.post_json("/v1/score", {{"source", src}, {"target", tgt}});
  ASSERT_EQ(j["scores"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(j["scores"][i]["score"].get<double>(), want[i].total, 1e-4);
    EXPECT_NEAR(j["scores"][i]["per_token"].get<double>(), want[i].per_token, 1e-4);
    EXPECT_EQ(j["scores"][i]["tokens"], want[i].tokens);
  }
  EXPECT_LT(j["scores"][1]["score"].get<double>(), j["scores"][0]["score"].get<double>());
}

// Each bad request: its status and words its error must contain.
struct Bad {
  std::string path, body;
  int status;
  std::vector<std::string> words;
};

TEST(Server, BadRequestsGetA4xxWithAJsonErrorNamingTheProblem) {
  ServerOptions o = two_workers();
  o.max_sentences = 3;
  o.max_text_length = 50;
  o.max_body_bytes = 300000;
  o.max_attention_values = 10000;  // 2 texts of 1 token, n_best 16, 1 layer, 4 heads: 2·16·4·2·52 = 13,312
  const Running s(o);
  const std::vector<Bad> cases = {
      {"/v1/translate", "{\"text\": [\"one\"", 400, {"not valid JSON"}},
      {"/v1/translate", "[1, 2]", 400, {"JSON object", "array"}},
      {"/v1/translate", "{}", 400, {"'text' is missing"}},
      {"/v1/translate", R"({"text": 5})", 400, {"'text'", "string or a list", "number"}},
      {"/v1/translate", R"({"text": ["one", 7]})", 400, {"'text[1]'", "number"}},
      {"/v1/translate", R"({"text": []})", 400, {"empty list"}},
      {"/v1/translate", R"({"text": ["one", "  "]})", 400, {"text[1] is empty"}},
      {"/v1/translate", R"({"text": ["one", "two", "three", "four"]})", 400, {"4 texts", "limit of 3", "--max-sentences"}},
      {"/v1/translate", json{{"text", {std::string(60, 'a')}}}.dump(), 400, {"text[0]", "60 characters", "--max-text-length"}},
      {"/v1/translate", R"({"text": "one", "beam": 0})", 400, {"'beam'", "[1, 16]", "got 0"}},
      {"/v1/translate", R"({"text": "one", "beam": 17})", 400, {"'beam'", "--max-beam", "got 17"}},
      {"/v1/translate", R"({"text": "one", "beam": 1e30})", 400, {"'beam' must be an integer"}},
      {"/v1/translate", R"({"text": "one", "beam": 18446744073709551615})", 400, {"'beam'", "18446744073709551615"}},
      {"/v1/translate", R"({"text": "one", "beam": "4"})", 400, {"'beam' must be an integer", "\"4\""}},
      {"/v1/translate", R"({"text": "one", "beam": 2, "n_best": 3})", 400, {"'n_best'", "[1, 2]", "at most the beam"}},
      {"/v1/translate", R"({"text": "one", "length_penalty": -1})", 400, {"'length_penalty'", "-1"}},
      {"/v1/translate", R"({"text": "one", "attention": "yes"})", 400, {"'attention' must be true or false"}},
      {"/v1/translate", R"({"text": "one", "beams": 4})", 400, {"unknown field 'beams'", "beam"}},
      {"/v1/translate", R"({"text": "one", "model": "fr-de"})", 404, {"unknown model 'fr-de'", "tiny"}},
      {"/v1/translate", R"({"text": "one", "model": 3})", 400, {"'model' must be a string"}},
      {"/v1/translate", R"({"text": "one", "scores": null})", 400, {"'scores' must be true or false", "null"}},
      {"/v1/translate", "{\"text\": \"\xff\xfe\"}", 400, {"not valid JSON", "UTF-8"}},
      {"/v1/translate", json{{"text", {std::string(300000, 'a')}}}.dump(), 413, {"300000 bytes", "--max-body-bytes"}},
      {"/v1/translate", R"({"text": "one", "length_penalty": 1e400})", 400, {"not valid JSON", "number overflow"}},
      {"/v1/translate", R"({"text": "\u3000\u200b"})", 400, {"text[0] has no tokens"}},
      {"/v1/translate", std::string(R"({"text": "one", "model": )") + std::string(100000, '[') + std::string(100000, ']') + "}",
       400, {"nests deeper than 16"}},
      {"/v1/translate", R"({"text": "one", "model": [[1, 2]]})", 400, {"'model' must be a string, got array"}},
      {"/v1/translate", R"({"text": ["one", "two"], "beam": 16, "n_best": 16, "attention": true})", 400,
       {"attention", "--max-attention-values"}},
      {"/v1/score", R"({"source": ["one", "two"], "target": ["eins"]})", 400, {"'source' has 2", "'target' has 1"}},
      {"/v1/score", R"({"source": ["one"]})", 400, {"'target' is missing"}},
      {"/v1/score", R"({"source": [""], "target": ["eins"]})", 400, {"source[0] is empty"}},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.body.substr(0, 80));
    auto r = s.post(c.path, c.body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, c.status) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    const json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j["error"].is_string()) << r->body;
    for (const std::string& w : c.words) EXPECT_NE(j["error"].get<std::string>().find(w), std::string::npos) << r->body;
  }
  auto get = s.client().Get("/v1/translate");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  auto missing = s.client().Get("/v2/translate");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("no such endpoint: GET /v2/translate"), std::string::npos);
  // The limit counts characters: 50 of them in 51 bytes pass.
  EXPECT_EQ(s.post_json("/v1/translate", {{"text", "\xc3\xa9" + std::string(49, 'a')}})["translations"].size(), 1u);
  // After all of that the server still translates.
  EXPECT_EQ(s.post_json("/v1/translate", {{"text", "one"}})["translations"].size(), 1u);
}

// --max-body-bytes holds for the body as read and decompressed, not only for a declared
// Content-Length: httplib 0.11 let a chunked body grow without limit, and inflated gzip bodies whole.
TEST(Server, TheBodyLimitHoldsForChunkedAndCompressedBodies) {
  ServerOptions o = two_workers();
  o.max_body_bytes = 4096;
  const Running s(o);
  const std::string small = R"({"text": "one"})";
  const std::string padded = R"({"text": "one")" + std::string(100000, ' ') + "}";  // 100 kB of JSON spaces
  // Chunked (no Content-Length): in pieces of 1000 bytes, on `client`'s connection.
  auto chunked = [](httplib::Client& client, const std::string& body) {
    return client.Post(
        "/v1/translate",
        [&body](size_t offset, httplib::DataSink& sink) {
          if (offset < body.size()) sink.write(body.data() + offset, std::min<size_t>(1000, body.size() - offset));
          else sink.done();
          return true;
        },
        "application/json");
  };
  httplib::Client plain = s.client();
  auto ok = chunked(plain, small);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto over = chunked(plain, padded);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->status, 413) << over->body;
  EXPECT_NE(over->body.find("--max-body-bytes"), std::string::npos) << over->body;
  // gzip: the padded body compresses to well under the limit, and is refused once inflated.
  httplib::Client gzip = s.client();
  gzip.set_compress(true);
  auto packed_ok = gzip.Post("/v1/translate", small, "application/json");
  ASSERT_TRUE(packed_ok);
  EXPECT_EQ(packed_ok->status, 200) << packed_ok->body;
  auto packed_over = gzip.Post("/v1/translate", padded, "application/json");
  ASSERT_TRUE(packed_over);
  EXPECT_EQ(packed_over->status, 413) << packed_over->body;
  EXPECT_NE(packed_over->body.find("once decompressed"), std::string::npos) << packed_over->body;
  // A declared length over the limit, as before; and the server still translates after all that.
  auto declared = s.post("/v1/translate", padded);
  ASSERT_TRUE(declared);
  EXPECT_EQ(declared->status, 413);
  EXPECT_EQ(s.post_json("/v1/translate", {{"text", "one"}})["translations"].size(), 1u);
  // Reading stops at the limit and the connection is closed after the 413: the rest of the body is
  // never taken for a request, and the client's next request goes on a new connection.
  httplib::Client kept = s.client();
  kept.set_keep_alive(true);
  auto first = chunked(kept, padded);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 413);
  auto second = kept.Post("/v1/translate", small, "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200) << second->body;
  // Other paths and methods do not hold a body either: compressed, it would inflate whole first.
  auto elsewhere = gzip.Post("/health", padded, "application/json");
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(elsewhere->status, 405);
  EXPECT_EQ(elsewhere->get_header_value("Allow"), "GET");
  auto nowhere = gzip.Put("/nope", padded, "application/json");
  ASSERT_TRUE(nowhere);
  EXPECT_EQ(nowhere->status, 404);
  EXPECT_NE(nowhere->body.find("no such endpoint: PUT /nope"), std::string::npos) << nowhere->body;
  // Multipart form data (curl -F) is refused as not JSON; it crashed the one-callback reader (500).
  httplib::MultipartFormDataItems form = {{"text", "one", "", ""}};
  auto multipart = s.client().Post("/v1/translate", form);
  ASSERT_TRUE(multipart);
  EXPECT_EQ(multipart->status, 415);
  EXPECT_NE(multipart->body.find("must be JSON"), std::string::npos) << multipart->body;
}

TEST(Server, NulBytesInATextAreRepairedWithAWarning) {
  const Running s(two_workers());
  // JSON escapes can carry a lone surrogate, which is not UTF-8 once decoded; nlohmann refuses
  // it, so the text reaches the server only as valid UTF-8. A NUL byte (\u0000) is repaired.
  const json j = s.post_json("/v1/translate", json::parse(R"({"text": ["one\u0000two"]})"));
  const json& t = j["translations"][0];
  ASSERT_TRUE(t.contains("warnings")) << j.dump();
  EXPECT_NE(t["warnings"][0].get<std::string>().find("NUL"), std::string::npos) << j.dump();
}

TEST(Server, AFullQueueAnswers503WithRetryAfter) {
  ServerOptions o;
  o.batching.workers = 1;
  o.batching.max_queue_sentences = 2;
  o.batching.max_wait_ms = 1500;  // the first request waits in the queue meanwhile
  o.max_sentences = 2;
  const Running s(o);
  auto first = std::async(std::launch::async, [&] { return s.post("/v1/translate", R"({"text": ["one", "two"]})"); });
  // Once the first request's 2 sentences wait in the queue, it is full.
  ASSERT_TRUE(s.wait_until_queued(2));
  httplib::Result second = s.post("/v1/translate", R"({"text": ["three"]})");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 503) << second->body;
  EXPECT_EQ(second->get_header_value("Retry-After"), "1");
  EXPECT_NE(second->body.find("busy"), std::string::npos);
  const auto r = first.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  auto m = s.client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("transformer_requests_total{endpoint=\"/v1/translate\",status=\"503\"}"), std::string::npos);
  EXPECT_NE(m->body.find("transformer_queue_capacity_sentences 2"), std::string::npos);
}

TEST(Server, AnApiKeyGuardsTheApiButNotThePageOrHealth) {
  ServerOptions o;
  o.api_key = "s3cret";
  const Running s(o);
  const std::string body = R"({"text": "one"})";
  auto none = s.post("/v1/translate", body);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_NE(none->body.find("API key"), std::string::npos);
  auto wrong = s.post("/v1/translate", body, {{"Authorization", "Bearer s3cre"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto bearer = s.post("/v1/translate", body, {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(bearer);
  EXPECT_EQ(bearer->status, 200);
  auto lower = s.post("/v1/translate", body, {{"Authorization", "bearer s3cret"}});  // schemes ignore case
  ASSERT_TRUE(lower);
  EXPECT_EQ(lower->status, 200) << lower->body;
  auto header = s.post("/v1/translate", body, {{"X-API-Key", "s3cret"}});
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, 200);
  auto metrics = s.client().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 401);
  for (const char* open : {"/", "/health", "/openapi.json"}) {
    auto r = s.client().Get(open);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << open;
  }
  const std::string file = testing::temp_path("key.txt");
  std::ofstream(file) << "  k3y \n";
  EXPECT_EQ(read_api_key(file), "k3y");
  std::ofstream(file) << "\n";
  testing::expect_error([&] { read_api_key(file); }, {"holds no key"});
  testing::expect_error([&] { read_api_key(file + ".missing"); }, {"cannot read --api-key-file"});
}

// Requests share a batch only with equal options: length penalties that print alike with 6 digits
// are decoded each with its own.
TEST(Server, RequestsWithOptionsThatDifferAreNotBatchedTogether) {
  ServerOptions o;
  o.batching.workers = 1;
  o.batching.max_wait_ms = 300;
  const Running s(o);
  const transformer::Translator t(kModel);
  auto ask = [&](double penalty) {
    return std::async(std::launch::async, [&s, penalty] {
      return s.post_json("/v1/translate", {{"text", "three hundred forty-two"}, {"scores", true}, {"length_penalty", penalty}});
    });
  };
  auto a = ask(0.1234561), b = ask(0.1234564);
  for (auto [penalty, answer] : {std::pair{0.1234561, a.get()}, std::pair{0.1234564, b.get()}}) {
    transformer::TranslateOptions to;
    to.search.length_penalty = penalty;
    const double want = t.translate({"three hundred forty-two"}, to)[0].best().normalized;
    EXPECT_DOUBLE_EQ(answer["translations"][0]["score"].get<double>(), want) << penalty;
  }
}

TEST(Server, A401LeavesTheConnectionUsable) {
  ServerOptions o;
  o.api_key = "k";
  const Running s(o);
  httplib::Client c = s.client();
  c.set_keep_alive(true);
  // The refused request's body is never taken for the connection's next request (the connection
  // is closed after the 401), and the client's next request is answered.
  auto refused = c.Post("/v1/translate", {{"X-API-Key", "wrong"}}, "{\"text\": \"one\"}\r\nGET /health HTTP/1.1\r\n\r\n",
                        "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  auto next = c.Post("/v1/translate", {{"X-API-Key", "k"}}, R"({"text": "one"})", "application/json");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200) << next->body;
}

TEST(Server, AStopBeforeListenEndsItAtOnceAndAPortServesOneServer) {
  ServerOptions o;
  o.models = {parse_model_spec("tiny=" + kModel)};
  o.port = 0;
  Server first(o);
  o.port = first.bind();
  Server second(o);
  testing::expect_error([&] { second.bind(); }, {"cannot listen on 127.0.0.1:", std::to_string(o.port).c_str()});
  first.stop();  // before listen(): a signal that came while the models loaded
  const auto start = std::chrono::steady_clock::now();
  first.listen();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(Server, StopAnswersTheRequestsInFlight) {
  ServerOptions o;
  o.batching.max_wait_ms = 2000;  // the request is still queued when stop() comes
  auto s = std::make_unique<Running>(o);
  auto inflight = std::async(std::launch::async, [&] { return s->post("/v1/translate", R"({"text": ["one"]})"); });
  ASSERT_TRUE(s->wait_until_queued(1));
  const auto start = std::chrono::steady_clock::now();
  s.reset();  // stop(), then join listen()
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  const auto r = inflight.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST(Server, Int8WeightsAnswerAsTheLibrarysInt8Translator) {
  ServerOptions o = two_workers();
  o.weights = transformer::TranslatorOptions::Weights::kInt8;
  const Running s(o);
  transformer::TranslatorOptions to;
  to.weights = transformer::TranslatorOptions::Weights::kInt8;
  const transformer::Translator t(kModel, to);
  const std::vector<std::string> lines = inputs();
  const auto want = t.translate(lines);
  const json j = s.post_json("/v1/translate", {{"text", lines}, {"scores", true}});
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(j["translations"][i]["text"], want[i].best().text);
    EXPECT_NEAR(j["translations"][i]["score"].get<double>(), want[i].best().normalized, 1e-4);
  }
  // Scoring needs the float32 weights: the server loads them for it.
  EXPECT_EQ(s.post_json("/v1/score", {{"source", "one"}, {"target", "eins"}})["scores"].size(), 1u);
}

TEST(Server, SeveralModelsByName) {
  ServerOptions o;
  o.models = {parse_model_spec("a=" + kModel), parse_model_spec("b=" + kModel)};
  const Running s(o);
  EXPECT_EQ(s.post_json("/v1/translate", {{"text", "one"}, {"model", "b"}})["model"], "b");
  const json error = s.post_json("/v1/translate", {{"text", "one"}}, 400);
  EXPECT_NE(error["error"].get<std::string>().find("name one in 'model' (a, b)"), std::string::npos);
  auto models = s.client().Get("/v1/models");
  ASSERT_TRUE(models);
  const json j = json::parse(models->body);
  ASSERT_EQ(j["models"].size(), 2u);
  EXPECT_EQ(j["models"][1]["name"], "b");
  EXPECT_GT(j["models"][0]["config"]["d_model"].get<int>(), 0);
}

TEST(Server, OptionsAndModelSpecsAreChecked) {
  EXPECT_EQ(parse_model_spec("runs/x/en-de.safetensors").name, "en-de");
  EXPECT_EQ(parse_model_spec("de-en=/m.safetensors").path, "/m.safetensors");
  testing::expect_error([] { parse_model_spec("a b=/m"); }, {"a model's name", "'a b'"});
  testing::expect_error([] { parse_model_spec("x="); }, {"names no model file"});
  ServerOptions o;
  testing::expect_error([&] { o.validate(); }, {"at least one model"});
  o.models = {parse_model_spec("a=/m"), parse_model_spec("a=/n")};
  testing::expect_error([&] { o.validate(); }, {"two models are named 'a'"});
  o.models.pop_back();
  o.port = 70000;
  testing::expect_error([&] { o.validate(); }, {"--port", "70000"});
  o.port = 1;
  o.max_sentences = 5000;
  testing::expect_error([&] { o.validate(); }, {"--max-sentences 5000", "--queue-size"});
  o.max_sentences = 1;
  o.models = {parse_model_spec("m=" + kModel + ".missing")};
  testing::expect_error([&] { Server server(o); }, {"model 'm'", ".missing"});
}

}  // namespace
}  // namespace tfm::serve
