// POST /v1/embed in-process: the encoder of the tiny translation model and an encoder-only model
// answer as the library's Encoder does; an encoder-only model refuses /v1/translate naming its
// architecture; bad requests are 400s naming the field.
#include <httplib.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/transformer.h"
#include "serve/server.h"
#include "testing/fixture.h"
#include "transformer/encoder.h"

namespace tfm::serve {
namespace {

using json = nlohmann::json;

const std::string kTiny = std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors";

// A server of `models` on a free port of 127.0.0.1, listening on its own thread.
class Serving {
 public:
  explicit Serving(const std::vector<std::string>& specs) {
    ServerOptions o;
    for (const std::string& s : specs) o.models.push_back(parse_model_spec(s));
    o.port = 0;
    server_ = std::make_unique<Server>(o);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->listen(); });
  }
  ~Serving() {
    server_->stop();
    thread_.join();
  }
  json post(const std::string& path, const json& body, int status) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60);
    auto r = c.Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, status) << r->body;
    return json::parse(r->body);
  }

 private:
  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::thread thread_;
};

// A tiny encoder-only model with the tiny translation model's vocabulary beside it.
std::string encoder_only_model() {
  const auto tiny = load_model(kTiny);
  ModelConfig c = tiny->config();
  c.architecture = "encoder-only";
  c.encoder_layers = 1;
  const std::string dir = testing::temp_path("embed_serve");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(TFM_FIXTURE_DIR) + "/tiny_model/vocab.model", dir + "/vocab.model",
                             std::filesystem::copy_options::overwrite_existing);
  Transformer m(c);
  m.init_parameters(3);
  save_model(m, dir + "/model.safetensors");
  return dir + "/model.safetensors";
}

void expect_rows(const json& got, const std::vector<transformer::Embedding>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].values.size());
    for (size_t d = 0; d < want[i].values.size(); ++d) EXPECT_EQ(got[i][d].get<float>(), want[i].values[d]);
  }
}

TEST(Embed, AnswersAsTheLibrarysEncoder) {
  const std::string bert = encoder_only_model();
  const Serving s({"tiny=" + kTiny, "bert=" + bert});
  const std::vector<std::string> texts = {"three hundred and five", "seven"};
  for (const auto& [name, path] : {std::pair{"tiny", kTiny}, std::pair{"bert", bert}}) {
    SCOPED_TRACE(name);
    transformer::EmbedOptions o;
    o.normalize = true;
    o.pooling = transformer::Pooling::kCls;
    const auto want = transformer::Encoder(path).embed(texts, o);
    const json j = s.post("/v1/embed", {{"texts", texts}, {"model", name}, {"pooling", "cls"}, {"normalize", true}}, 200);
    EXPECT_EQ(j["model"], name);
    expect_rows(j["embeddings"], want);
  }
  const json none = s.post("/v1/embed", {{"texts", "seven"}, {"model", "bert"}, {"pooling", "none"}}, 200);
  ASSERT_EQ(none["embeddings"].size(), 1u);
  EXPECT_GE(none["embeddings"][0].size(), 3u);  // bos, seven, eos: one vector each
  EXPECT_TRUE(none["embeddings"][0][0].is_array());
  // An encoder-only model does not translate or score: a 400 naming its architecture.
  const json refused = s.post("/v1/translate", {{"text", "seven"}, {"model", "bert"}}, 400);
  EXPECT_NE(refused["error"].get<std::string>().find("is an encoder-only model: /v1/translate needs an "
                                                    "encoder-decoder (translation) model (embed text with POST /v1/embed)"),
            std::string::npos)
      << refused;
  s.post("/v1/score", {{"source", "seven"}, {"target", "sieben"}, {"model", "bert"}}, 400);
  const json bad = s.post("/v1/embed", {{"texts", "seven"}, {"model", "bert"}, {"pooling", "sum"}}, 400);
  EXPECT_NE(bad["error"].get<std::string>().find("unknown pooling 'sum'"), std::string::npos) << bad;
  const json empty = s.post("/v1/embed", {{"texts", {"seven", " "}}, {"model", "tiny"}}, 400);
  EXPECT_NE(empty["error"].get<std::string>().find("texts[1] is empty"), std::string::npos) << empty;
}

}  // namespace
}  // namespace tfm::serve
