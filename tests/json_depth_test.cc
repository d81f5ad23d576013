// JSON nested too deep, in every kind of file the program reads (a safetensors header, a model's
// configuration in its metadata, Hugging Face's config.json and vocab.json, a piece vocabulary,
// training options, metrics.jsonl): a clear error naming the source and the limit, not a stack
// overflow; and values quoted in messages as a bounded prefix.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/json_text.h"
#include "data/vocab.h"
#include "import/import.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "testing/errors.h"
#include "testing/fixture.h"
#include "train/metrics.h"
#include "transformer/train_options.h"

namespace tfm {
namespace {
namespace fs = std::filesystem;
using testing::expect_error;

// `levels` arrays, one inside the other: [[[...]]].
std::string nested(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

// Deep enough to overflow the stack of a recursive walk (dump(), a copy, a comparison).
const std::string kDeep = nested(100000);

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(JsonDepth, TheLimitIsExact) {
  EXPECT_NO_THROW(parse_json(nested(kMaxJsonDepth), "t"));
  expect_error([] { parse_json(nested(kMaxJsonDepth + 1), "here"); }, {"here: JSON nested deeper than 64 levels"});
  expect_error([] { parse_json("{\"a\":" + nested(kMaxJsonDepth) + "}", "obj"); }, {"obj", "deeper than 64"});
  expect_error([] { parse_json("[1,", "cut"); }, {"cut: not valid JSON"});
  EXPECT_TRUE(parse_json_or_discarded("[1,", "torn").is_discarded());
  expect_error([] { parse_json_or_discarded(kDeep, "deep"); }, {"deep: JSON nested deeper than 64"});
}

TEST(JsonDepth, QuotesAreBoundedPrefixes) {
  const nlohmann::json deep = parse_json(nested(kMaxJsonDepth), "t");
  EXPECT_EQ(json_quote(deep, 10), "[[[[[[[[[[...");
  EXPECT_EQ(json_quote(nlohmann::json(std::string(1000, 'x'))).size(), 83u);
  EXPECT_EQ(json_quote(nlohmann::json::parse(R"({"a":[1,2],"b":"c"})")), R"({"a":[1,2],"b":"c"})");
  EXPECT_EQ(json_quote(nlohmann::json(5)), "5");
  // A cut never splits a UTF-8 character.
  EXPECT_EQ(json_quote(nlohmann::json("\xc3\xa9\xc3\xa9"), 4), "\"\xc3\xa9...");
}

TEST(JsonDepth, SafetensorsHeader) {
  for (const char* field : {"shape", "data_offsets"}) {
    std::string header = std::string("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}");
    const std::string plain = std::string("\"") + field + "\":[";
    header.replace(header.find(plain), plain.size(), "\"" + std::string(field) + "\":[" + kDeep + ",");
    header.append((8 - header.size() % 8) % 8, ' ');
    std::string bytes(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(bytes.data(), &n, 8);
    expect_error([&] { SafetensorsFile::parse(bytes + header, "crafted"); }, {"crafted: the header", "deeper than 64"});
  }
}

TEST(JsonDepth, ModelConfigInMetadata) {
  const std::string path = testing::temp_path("deep-config.safetensors");
  write_safetensors(path, {{"format", kModelFormat}, {"format_version", kModelFormatVersion}, {"config", kDeep}}, {});
  expect_error([&] { read_model_config(SafetensorsFile::read(path)); }, {path.c_str(), "metadata 'config'", "deeper than 64"});
}

TEST(JsonDepth, HuggingFaceFiles) {
  const fs::path dir = testing::temp_path("deep-hf");
  fs::remove_all(dir);
  fs::create_directories(dir);
  write(dir / "config.json", "{\"model_type\":" + kDeep + "}");
  expect_error([&] { import_hf(dir.string()); }, {"config.json", "deeper than 64"});
  // A valid config.json, then a deep vocab.json (read before the weights).
  const fs::path fixture = fs::path(TFM_FIXTURE_DIR) / "import" / "hf";
  fs::copy_file(fixture / "config.json", dir / "config.json", fs::copy_options::overwrite_existing);
  write(dir / "vocab.json", "{\"<pad>\":" + kDeep + "}");
  expect_error([&] { import_hf(dir.string()); }, {"vocab.json", "deeper than 64"});
  write(dir / "tokenizer_config.json", kDeep);
  expect_error([&] { import_hf(dir.string()); }, {"tokenizer_config.json", "deeper than 64"});
}

TEST(JsonDepth, PieceVocabulary) {
  const std::string path = testing::temp_path("deep-vocabulary.json");
  write(path, "{\"format\":" + kDeep + "}");
  expect_error([&] { Vocab::load(path); }, {path.c_str(), "deeper than 64"});
}

TEST(JsonDepth, TrainingOptions) {
  expect_error([] { transformer::train_options_from_json("{\"model\":" + kDeep + "}"); },
               {"training options", "deeper than 64"});
  // A field of the wrong type, deep but within the limit, is quoted as a prefix.
  expect_error([] { transformer::train_options_from_json("{\"max_steps\":" + nested(kMaxJsonDepth - 1) + "}"); },
               {"'max_steps' must be an integer, got [[[[", "..."});
}

TEST(JsonDepth, MetricsLog) {
  const std::string path = testing::temp_path("deep-metrics.jsonl");
  write(path, "{\"step\":1,\"loss\":2}\n{\"step\":" + kDeep + "}\n");
  expect_error([&] { MetricsLog(path).read(); }, {path.c_str(), "line 2", "deeper than 64"});
}

}  // namespace
}  // namespace tfm
