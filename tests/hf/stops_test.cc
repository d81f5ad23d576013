// Several end-of-sequence ids (instruct checkpoints' eos_token_id lists) imported from Hugging Face
// folders: generation_config.json's list preferred to config.json's, the first id eos_id and the
// others stop_ids, and the lists refused with the value at fault. Generation with them against
// generate() is decoder_test.cc's, on tests/fixtures/hf/llama_stops.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "import/hf_common.h"
#include "testing/fixture.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kStops = fs::path(TFM_FIXTURE_DIR) / "hf" / "llama_stops";

// A copy of the llama_stops folder whose config.json and generation_config.json `edit` changes (a
// null generation config: the file removed).
std::string edited(const std::string& name, const std::function<void(json& config, json& generation)>& edit) {
  const fs::path dir = testing::temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kStops)) fs::copy(e.path(), dir / e.path().filename());
  json config = read_hf_json(dir / "config.json"), generation = read_hf_json(dir / "generation_config.json");
  edit(config, generation);
  std::ofstream(dir / "config.json") << config.dump(2);
  if (generation.is_null()) fs::remove(dir / "generation_config.json");
  else std::ofstream(dir / "generation_config.json") << generation.dump(2);
  return dir.string();
}

// The fixture's further ids (reference.json: generation_config.json's list, [2, a, b]).
std::vector<int32_t> listed() {
  return read_hf_json(kStops / "reference.json")["eos_token_id"].get<std::vector<int32_t>>();
}

TEST(HfStopIds, GenerationConfigListGivesEosAndStopIds) {
  const std::vector<int32_t> ids = listed();
  ASSERT_EQ(ids.size(), 3u);
  const ImportedModel m = import_hf_without_vocabulary(kStops.string());
  EXPECT_EQ(m.config.eos_id, ids[0]);
  EXPECT_EQ(m.config.stop_ids, std::vector<int32_t>(ids.begin() + 1, ids.end()));
  EXPECT_EQ(m.config.bos_id, 1);
  bool noted = false;
  for (const std::string& n : m.notes) noted = noted || n.find("stop_ids") != std::string::npos;
  EXPECT_TRUE(noted) << "no note says which ids end generation";
  // The fixture's point: generate() ended each continuation at a further id, not at the first.
  const json ends = read_hf_json(kStops / "reference.json")["ends"];
  for (const char* key : {"greedy", "beam4"})
    for (const json& end : ends[key]) EXPECT_TRUE(end == ids[1] || end == ids[2]) << key << " ended at " << end;
}

TEST(HfStopIds, ConfigJsonListWithoutAGenerationConfig) {
  const std::vector<int32_t> ids = listed();
  const ImportedModel m = import_hf_without_vocabulary(edited("stops_config", [&](json& c, json& g) {
    c["eos_token_id"] = {ids[2], ids[1], ids[2], ids[0]};  // a repeated id counts once
    g = nullptr;
  }));
  EXPECT_EQ(m.config.eos_id, ids[2]);
  EXPECT_EQ(m.config.stop_ids, (std::vector<int32_t>{ids[1], ids[0]}));
  // generation_config.json's one id is what generate() stops at: config.json's list is not read.
  const ImportedModel one = import_hf_without_vocabulary(edited("stops_one", [&](json& c, json& g) {
    c["eos_token_id"] = ids;
    g["eos_token_id"] = ids[1];
  }));
  EXPECT_EQ(one.config.eos_id, ids[1]);
  EXPECT_TRUE(one.config.stop_ids.empty());
  // A BOS that is one of the end ids is put before no prompt (as one equal to eos_token_id).
  const ImportedModel bos = import_hf_without_vocabulary(edited("stops_bos", [&](json& c, json& g) {
    c["bos_token_id"] = ids[2];
    (void)g;
  }));
  EXPECT_EQ(bos.config.bos_id, -1);
}

void expect_refused(const std::string& name, const std::function<void(json&, json&)>& edit,
                    const std::vector<std::string>& words) {
  try {
    import_hf_without_vocabulary(edited(name, edit));
    ADD_FAILURE() << "accepted, expected an error naming " << ::testing::PrintToString(words);
  } catch (const Error& e) {
    for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

TEST(HfStopIds, BadListsAreRefusedNamingTheValue) {
  expect_refused("stops_outside", [](json&, json& g) { g["eos_token_id"] = {2, 280}; },
                 {"generation_config.json", "eos_token_id 280", "outside the vocabulary"});
  expect_refused("stops_negative", [](json& c, json& g) { c["eos_token_id"] = {2, -4}; g = nullptr; },
                 {"config.json", "eos_token_id -4"});
  expect_refused("stops_text", [](json&, json& g) { g["eos_token_id"] = {2, "</s>"}; },
                 {"eos_token_id", "\"</s>\""});
  expect_refused("stops_null", [](json&, json& g) { g["eos_token_id"] = {2, nullptr}; },
                 {"eos_token_id", "lists null"});
  expect_refused("stops_empty", [](json& c, json& g) { c["eos_token_id"] = json::array(); g = nullptr; },
                 {"eos_token_id is missing"});
}

}  // namespace
}  // namespace tfm
