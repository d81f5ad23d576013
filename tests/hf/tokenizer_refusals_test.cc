// What the Hugging Face tokenizer (data/hf_tokenizer.h) refuses, and how: components it does not
// implement and malformed tokenizer.json named in the error; ids out of range; and the speed
// guard (a 10,000-character word must not take quadratic time).
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/hf_tokenizer.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

json fixture_json(const std::string& name) {
  std::ifstream in(fs::path(TFM_FIXTURE_DIR) / "hf" / "tokenizers" / name / "tokenizer.json");
  std::ostringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

// The error message of loading `j`, or "" when it loads.
std::string load_error(const json& j) {
  try {
    HfTokenizer::from_json(j.dump(), "'t/tokenizer.json'");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HfTokenizerRefusals, UnknownComponentsAreNamed) {
  json j = fixture_json("gpt2");
  j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}};
  EXPECT_THAT(load_error(j), HasSubstr("'t/tokenizer.json': normalizer.type: normalizer 'Precompiled' is not supported"));
  j = fixture_json("gpt2");
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "UnicodeScripts"}}}}};
  EXPECT_THAT(load_error(j), HasSubstr("pre_tokenizer.pretokenizers[0].type: pre-tokenizer 'UnicodeScripts'"));
  j = fixture_json("gpt2");
  j["decoder"] = {{"type", "CTC"}};
  EXPECT_THAT(load_error(j), HasSubstr("decoder.type: decoder 'CTC' is not supported"));
  j = fixture_json("gpt2");
  j["model"] = {{"type", "Unigram"}, {"vocab", json::array()}};
  EXPECT_THAT(load_error(j), HasSubstr("model.type: model 'Unigram' is not supported"));
  j = fixture_json("gpt2");
  j["post_processor"] = {{"type", "Fancy"}};
  EXPECT_THAT(load_error(j), HasSubstr("post_processor.type: post-processor 'Fancy' is not supported"));
}

TEST(HfTokenizerRefusals, SettingsThatChangeIdsAreRefused) {
  json j = fixture_json("gpt2");
  j["model"]["dropout"] = 0.1;
  EXPECT_THAT(load_error(j), HasSubstr("model.dropout: BPE dropout 0.1 is not supported"));
  j = fixture_json("gpt2");
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Sideways"}};
  EXPECT_THAT(load_error(j), HasSubstr("pre_tokenizer.behavior: unknown split behavior \"Sideways\""));
  j = fixture_json("llama2");
  j["pre_tokenizer"]["prepend_scheme"] = "sometimes";
  EXPECT_THAT(load_error(j), HasSubstr("pre_tokenizer.prepend_scheme: must be always, first or never"));
}

// Truncation and padding in tokenizer.json are batch settings that transformers overrides per call:
// a long text keeps all its ids, as transformers' tokenizer(text) gives them.
TEST(HfTokenizerRefusals, TruncationAndPaddingSettingsDoNotCutATextsIds) {
  json j = fixture_json("gpt2");
  const std::string text = "a man in a blue shirt is standing on a ladder cleaning windows .";
  const std::vector<int32_t> full = HfTokenizer::from_json(j.dump(), "gpt2").encode(text, true);
  ASSERT_GT(full.size(), 8u);
  j["truncation"] = {{"max_length", 8}, {"strategy", "LongestFirst"}, {"stride", 0}, {"direction", "Right"}};
  j["padding"] = {{"strategy", {{"Fixed", 32}}}, {"pad_id", 0}, {"pad_token", "<pad>"}, {"direction", "Right"}};
  EXPECT_EQ(HfTokenizer::from_json(j.dump(), "gpt2").encode(text, true), full);
}

TEST(HfTokenizerRefusals, MalformedFilesAreNamed) {
  EXPECT_THROW(
      {
        try {
          HfTokenizer::from_json("{\"model\": ", "'t/tokenizer.json'");
        } catch (const Error& e) {
          EXPECT_THAT(e.what(), HasSubstr("t/tokenizer.json"));
          throw;
        }
      },
      Error);
  json j = fixture_json("gpt2");
  j.erase("model");
  EXPECT_THAT(load_error(j), HasSubstr("'t/tokenizer.json': model: is missing"));
  j = fixture_json("gpt2");
  j["model"]["merges"][3] = "a b c";
  EXPECT_THAT(load_error(j), HasSubstr("model.merges[3]: must be two tokens separated by one space"));
  j = fixture_json("gpt2");
  j["model"]["merges"][0] = "zzzqqq Ġ";
  EXPECT_THAT(load_error(j), HasSubstr("model.merges[0]: token 'zzzqqq' is not in the vocabulary"));
  j = fixture_json("bert-cased");
  j["model"]["max_input_chars_per_word"] = "many";
  EXPECT_THAT(load_error(j), HasSubstr("model.max_input_chars_per_word: must be a non-negative integer"));
  j = fixture_json("bert-cased");
  j["added_tokens"][0].erase("content");
  EXPECT_THAT(load_error(j), HasSubstr("added_tokens[0].content: is missing"));
}

TEST(HfTokenizerRefusals, DecodeNamesAnIdOutOfRange) {
  const HfTokenizer tok = HfTokenizer::from_json(fixture_json("gpt2").dump(), "gpt2");
  try {
    tok.decode({5, static_cast<int32_t>(tok.size())}, false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("id " + std::to_string(tok.size()) + " is out of range"));
  }
  EXPECT_THROW(tok.decode({-1}, true), Error);
}

TEST(HfTokenizerRefusals, VocabTxtWithoutBertPiecesIsRefused) {
  try {
    HfTokenizer::from_wordpiece_vocab("[PAD]\n[UNK]\nhello\n", true, std::nullopt, true, "v/vocab.txt");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("v/vocab.txt: BERT's vocabulary has no [CLS] piece"));
  }
}

// A word of 10,000 random letters through each model: merges by priority queue, not by rescans.
TEST(HfTokenizerSpeed, LongWordsEncodeQuickly) {
  std::mt19937 rng(7);
  std::string word;
  for (int i = 0; i < 10000; ++i) word += static_cast<char>('a' + rng() % 26);
  for (const char* name : {"gpt2", "llama2", "bert-uncased", "qwen2"}) {
    const HfTokenizer tok = HfTokenizer::from_json(fixture_json(name).dump(), name);
    const auto start = std::chrono::steady_clock::now();
    const auto ids = tok.encode(word, false);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_FALSE(ids.empty()) << name;
    EXPECT_LT(seconds, 0.25) << name << ": a 10,000-character word took " << seconds << " s";
  }
}

TEST(HfTokenizerAccessors, TokensIdsAndSpecials) {
  const HfTokenizer bert = HfTokenizer::from_json(fixture_json("bert-uncased").dump(), "bert");
  const int32_t cls = bert.token_to_id("[CLS]"), sep = bert.token_to_id("[SEP]");
  EXPECT_EQ(bert.prefix_ids(), std::vector<int32_t>{cls});
  EXPECT_EQ(bert.suffix_ids(), std::vector<int32_t>{sep});
  EXPECT_TRUE(bert.is_special(cls));
  EXPECT_EQ(bert.id_to_token(cls), "[CLS]");
  EXPECT_EQ(bert.unk_id(), std::optional<int32_t>(bert.token_to_id("[UNK]")));
  EXPECT_EQ(bert.token_to_id("no such token"), -1);
  const HfTokenizer gpt2 = HfTokenizer::from_json(fixture_json("gpt2").dump(), "gpt2");
  EXPECT_TRUE(gpt2.prefix_ids().empty());
  EXPECT_EQ(gpt2.unk_id(), std::nullopt);
  EXPECT_EQ(gpt2.size(), gpt2.token_to_id("<|endoftext|>") + 1);
  EXPECT_EQ(gpt2.id_to_token(static_cast<int32_t>(gpt2.size())), "");
}

}  // namespace
}  // namespace tfm
