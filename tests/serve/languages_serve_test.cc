// POST /v1/translate with a multilingual model (the NLLB fixture, tests/fixtures/hf, imported):
// the source_lang and target_lang fields reach the translation, which equals the library's and
// transformers' generate(); a missing or unknown code is a 400 naming it.
#include <httplib.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "import/import.h"
#include "io/atomic_file.h"
#include "serve/server.h"
#include "testing/fixture.h"

namespace tfm::serve {
namespace {

using json = nlohmann::json;

TEST(ServeLanguages, SourceAndTargetLanguageReachTheTranslation) {
  const std::string dir = testing::temp_path("serve-nllb");
  std::filesystem::remove_all(dir);
  const std::string fixtures = std::string(TFM_FIXTURE_DIR) + "/hf";
  const std::string model = write_imported(import_hf(fixtures + "/nllb"), dir);
  const json ref = json::parse(read_file(fixtures + "/m2m100_reference.json"))["nllb"];
  ServerOptions o;
  o.models.push_back(parse_model_spec("nllb=" + model));
  o.port = 0;
  Server server(o);
  const int port = server.bind();
  std::thread thread([&] { server.listen(); });
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60);
  const auto post = [&](const json& body, int status) {
    auto r = c.Post("/v1/translate", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, status) << r->body;
    return json::parse(r->body);
  };
  // Greedy: generate()'s text for the sentences that end before its limit (12 new tokens).
  for (size_t i = 0; i < ref["sources"].size(); ++i) {
    const json& hf = ref["greedy"][i];
    if (hf["ids"].back() != 2) continue;
    const json out = post({{"text", ref["sources"][i]}, {"beam", 1}, {"source_lang", ref["source_lang"]},
                           {"target_lang", ref["target_lang"]}},
                          200);
    EXPECT_EQ(out["translations"][0]["text"], hf["text_after_language"]) << i;
  }
  const json unknown = post({{"text", "A man."}, {"source_lang", "eng_Latn"}, {"target_lang", "xx_Yyyy"}}, 400);
  EXPECT_NE(unknown.dump().find("xx_Yyyy"), std::string::npos) << unknown.dump();
  const json missing = post({{"text", "A man."}, {"source_lang", "eng_Latn"}}, 400);
  EXPECT_NE(missing.dump().find("target_lang"), std::string::npos) << missing.dump();
  server.stop();
  thread.join();
}

}  // namespace
}  // namespace tfm::serve
