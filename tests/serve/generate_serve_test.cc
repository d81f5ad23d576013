// POST /v1/generate in-process against a tiny decoder-only model of random weights: answers equal
// the library's Generator (greedy, sampling, n-best, include_prompt), a stream carries each token
// then the whole answer, and the refusals (an endpoint given a model of another architecture, bad
// options) are 400s naming the problem.
#include <httplib.h>

#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "serve/server.h"
#include "testing/fixture.h"
#include "transformer/generator.h"
#include "transformer/model.h"

namespace tfm::serve {
namespace {

using json = nlohmann::json;

const std::string kTiny = std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors";
const std::string kVocab = std::string(TFM_FIXTURE_DIR) + "/tiny_model/vocab.model";

// A decoder-only model of the tiny translation model's vocabulary, made once.
const std::string& lm_path() {
  static const std::string path = [] {
    const transformer::ModelInfo info = transformer::model_info(kTiny, false);
    transformer::ModelConfig c = transformer::model_preset("tiny");
    for (const auto& [k, v] : info.config)
      if (k == "vocab_size") c.vocab_size = std::stoll(v);
    c.architecture = "decoder-only";
    c.encoder_layers = 0;
    c.decoder_layers = 2;
    c.d_model = 16;
    c.heads = 2;
    c.d_ff = 32;
    c.positions = "learned";
    c.max_positions = 128;
    const std::string p = testing::temp_path("lm.safetensors");
    transformer::init_model(c, 5, p);
    return p;
  }();
  return path;
}

// A server of the language model "lm" (and with `translation` the translation model "tiny"), on a
// free port.
class LmServer {
 public:
  explicit LmServer(ServerOptions o = {}, bool translation = false) {
    o.models = {parse_model_spec("lm=" + lm_path())};
    o.models[0].vocab = kVocab;
    if (translation) o.models.push_back(parse_model_spec("tiny=" + kTiny));
    o.batching.workers = 2;
    o.batching.max_wait_ms = 5;
    o.port = 0;
    server_ = std::make_unique<Server>(o);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->listen(); });
  }
  ~LmServer() {
    server_->stop();
    thread_.join();
  }
  httplib::Result post(const std::string& path, const json& body) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60);
    return c.Post(path.c_str(), body.dump(), "application/json");
  }
  json post_json(const std::string& path, const json& body, int status = 200) const {
    auto r = post(path, body);
    EXPECT_TRUE(r) << httplib::to_string(r.error());
    if (!r) return {};
    EXPECT_EQ(r->status, status) << r->body;
    return json::parse(r->body);
  }

 private:
  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::thread thread_;
};

transformer::Generator library_generator() {
  transformer::GeneratorOptions o;
  o.vocab = kVocab;
  return transformer::Generator(lm_path(), o);
}

const std::vector<std::string> kPrompts = {"three hundred", "", "five"};

TEST(Generate, AnswersAsTheLibraryGenerates) {
  const LmServer s;
  const transformer::Generator g = library_generator();
  transformer::GenerationOptions o;
  o.max_new_tokens = 7;
  const std::vector<transformer::Generation> greedy = g.generate_batch(kPrompts, o);
  json j = s.post_json("/v1/generate", {{"prompts", kPrompts}, {"max_new_tokens", 7}});
  EXPECT_EQ(j["model"], "lm");
  ASSERT_EQ(j["generations"].size(), kPrompts.size());
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    EXPECT_EQ(j["generations"][i]["text"], greedy[i].best().text) << i;
    EXPECT_NEAR(j["generations"][i]["score"].get<double>(), greedy[i].best().normalized, 1e-4) << i;
  }
  // Sampling from a seed, with the prompt included; a single string is a list of one.
  o.search.sampling_topk = -1;
  o.search.seed = 11;
  o.include_prompt = true;
  const transformer::Generation sampled = g.generate(kPrompts[0], o);
  j = s.post_json("/v1/generate", {{"prompts", kPrompts[0]}, {"max_new_tokens", 7}, {"sampling_topk", -1},
                                   {"seed", 11}, {"include_prompt", true}, {"return_scores", false}});
  EXPECT_EQ(j["generations"][0]["text"], sampled.best().text);
  EXPECT_FALSE(j["generations"][0].contains("score"));
  // Beam search's n-best list.
  transformer::GenerationOptions beam;
  beam.max_new_tokens = 5;
  beam.search.beam_size = 3;
  beam.search.n_best = 2;
  const transformer::Generation best = g.generate(kPrompts[2], beam);
  j = s.post_json("/v1/generate", {{"prompts", {kPrompts[2]}}, {"max_new_tokens", 5}, {"beam_size", 3}, {"n_best", 2}});
  ASSERT_EQ(j["generations"][0]["hypotheses"].size(), 2u);
  EXPECT_EQ(j["generations"][0]["hypotheses"][1]["text"], best.hypotheses[1].text);
}

// The "data:" events of a server-sent event stream, as JSON.
std::vector<json> events(const std::string& body) {
  std::vector<json> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("data: ", 0) == 0) out.push_back(json::parse(line.substr(6)));
  return out;
}

TEST(Generate, AStreamSendsEachTokenAsAnEventThenTheWholeAnswer) {
  const LmServer s;
  const transformer::Generator g = library_generator();
  transformer::GenerationOptions o;
  o.max_new_tokens = o.min_new_tokens = 6;
  const std::vector<transformer::Generation> want = g.generate_batch(kPrompts, o);
  const json body = {{"prompts", kPrompts}, {"max_new_tokens", 6}, {"min_new_tokens", 6}};
  json streamed = body;
  streamed["stream"] = true;
  auto r = s.post("/v1/generate", streamed);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  const std::vector<json> got = events(r->body);
  ASSERT_EQ(got.size(), 3 * 6 + 1u) << r->body;
  std::vector<std::vector<int32_t>> ids(kPrompts.size());
  std::vector<std::string> text(kPrompts.size());
  for (size_t e = 0; e + 1 < got.size(); ++e) {
    const auto i = got[e]["index"].get<size_t>();
    ids.at(i).push_back(got[e]["id"].get<int32_t>());
    text.at(i) += got[e]["text"].get<std::string>();
  }
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    EXPECT_EQ(ids[i], want[i].best().ids) << i;
    EXPECT_EQ(text[i], want[i].best().text) << i;
  }
  // The last event is the answer the same request gets without streaming.
  EXPECT_EQ(got.back(), s.post_json("/v1/generate", body));
}

TEST(Generate, EndpointsRefuseModelsOfAnotherArchitectureNamingIt) {
  const LmServer s({}, true);
  auto message = [](const json& j) { return j.value("error", std::string()); };
  std::string e = message(s.post_json("/v1/translate", {{"text", "one"}, {"model", "lm"}}, 400));
  EXPECT_NE(e.find("model 'lm' is a decoder-only model: /v1/translate"), std::string::npos) << e;
  e = message(s.post_json("/v1/score", {{"source", "one"}, {"target", "eins"}, {"model", "lm"}}, 400));
  EXPECT_NE(e.find("decoder-only"), std::string::npos) << e;
  e = message(s.post_json("/v1/generate", {{"prompts", "one"}, {"model", "tiny"}}, 400));
  EXPECT_NE(e.find("model 'tiny' is an encoder-decoder model: /v1/generate needs a decoder-only"), std::string::npos)
      << e;
  // A generation longer than the model's learned positions.
  e = message(s.post_json("/v1/generate", {{"prompts", {"", "five"}}, {"model", "lm"}, {"max_new_tokens", 127}}, 400));
  EXPECT_NE(e.find("prompts[1] has 2 tokens with BOS: with max_new_tokens 127 that is more than the 128 positions"),
            std::string::npos) << e;
  // The translation model still translates.
  EXPECT_EQ(s.post_json("/v1/translate", {{"text", "one"}, {"model", "tiny"}})["translations"].size(), 1u);
}

TEST(Generate, BadRequestsNameTheFieldAndValue) {
  ServerOptions limits;
  limits.max_input_tokens = 20;
  const LmServer s(limits);
  std::string long_prompt;
  for (int i = 0; i < 25; ++i) long_prompt += "three hundred ";
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"prompts", "a"}, {"stream", true}, {"beam_size", 2}}, "needs beam_size 1, got 2"},
      {{{"prompts", "a"}, {"sampling_topp", 0.5}}, "sampling top-p 0.5"},
      {{{"prompts", "a"}, {"sampling_topk", -1}, {"beam_size", 2}}, "beam size 1"},
      {{{"prompts", "a"}, {"max_new_tokens", 21}}, "'max_new_tokens' must be in [0, 20] (--max-input-tokens), got 21"},
      {{{"prompts", "a"}, {"max_new_tokens", 3}, {"min_new_tokens", 4}}, "'min_new_tokens' must be in [0, 3]"},
      {{{"prompts", "a"}, {"beam", 2}}, "unknown field 'beam'"},
      {{{"prompts", {"a", long_prompt}}}, "prompts[1] has"},
      {{{"model", "lm"}}, "'prompts' is missing"},
  };
  for (const auto& [body, want] : bad) {
    const json j = s.post_json("/v1/generate", body, 400);
    EXPECT_NE(j.value("error", std::string()).find(want), std::string::npos) << body << " → " << j;
  }
}

}  // namespace
}  // namespace tfm::serve
