// The Hugging Face tokenizers (data/hf_tokenizer.h) against the `tokenizers` library: for each
// tokenizer of tests/fixtures/hf/tokenizers (tools/make_tokenizer_fixtures.py), the ids with and
// without special tokens and the decoded text of every line of the Multi30k test sets (read from
// ../shared/data) and of a hostile-Unicode list; BERT's vocab.txt read as the fast tokenizer;
// refusals of what is not implemented; the speed of a 10,000-character word.
#include <zlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/hf_components.h"
#include "data/hf_tokenizer.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kDir = fs::path(TFM_FIXTURE_DIR) / "hf" / "tokenizers";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat("cannot read ", path.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string read_gzip(const fs::path& path) {
  const std::string packed = read_file(path);
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw Error("inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  z.avail_in = static_cast<uInt>(packed.size());
  std::string out;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) throw Error(cat(path.string(), ": not gzip'd data"));
  return out;
}

json read_gzip_json(const fs::path& path) { return json::parse(read_gzip(path)); }

// A fixture's tokenizer.json, or the variants' tokenizer.json.gz.
std::string tokenizer_json(const std::string& name) {
  const fs::path file = kDir / name / "tokenizer.json";
  return fs::exists(file) ? read_file(file) : read_gzip(file.string() + ".gz");
}

HfTokenizer load(const std::string& name) { return HfTokenizer::from_json(tokenizer_json(name), name + "/tokenizer.json"); }

// The Multi30k data: TFM_SHARED_DATA, else the folder beside the repository.
fs::path shared_data() {
  if (const char* env = std::getenv("TFM_SHARED_DATA")) return env;
  return fs::path(TFM_FIXTURE_DIR) / ".." / ".." / ".." / "shared" / "data";
}

// The texts of a set: the lines of its file, or the hostile list (bytes; the reference text is
// what Python made of them).
struct Texts {
  std::vector<std::string> input, reference;
};

Texts hostile_texts() {
  Texts t;
  for (const auto& item : read_gzip_json(kDir / "hostile.json.gz")) {
    if (item.contains("text")) {
      t.input.push_back(item["text"]);
      t.reference.push_back(item["text"]);
      continue;
    }
    const std::string hex = item["hex"];
    std::string bytes;
    for (size_t i = 0; i < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    t.input.push_back(bytes);
    t.reference.push_back(item["replaced"]);
  }
  return t;
}

Texts corpus_texts(const fs::path& path) {
  Texts t;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) t.input.push_back(line);
  t.reference = t.input;
  return t;
}

std::string show(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size() && i < 40; ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  return out + (ids.size() > 40 ? " ...]" : "]");
}

std::vector<int32_t> concat(const json& prefix, const std::vector<int32_t>& ids, const json& suffix) {
  std::vector<int32_t> out = prefix.get<std::vector<int32_t>>();
  out.insert(out.end(), ids.begin(), ids.end());
  for (const auto& id : suffix) out.push_back(id);
  return out;
}

// Every line of one set against the expected outputs; the first line that differs is reported.
void check_set(const HfTokenizer& tok, const std::string& name, const std::string& set, const json& doc,
               const json& base, const Texts& texts) {
  const json& s = doc["sets"][set];
  ASSERT_EQ(texts.input.size(), s["lines"].get<size_t>()) << name << " " << set << ": line count";
  for (size_t i = 0; i < texts.input.size(); ++i) {
    const std::string key = std::to_string(i);
    const json& ids_json = s["ids"][i].is_null() ? base["sets"][set]["ids"][i] : s["ids"][i];
    const auto want = ids_json.get<std::vector<int32_t>>();
    const auto want_with = s["with"].contains(key) ? s["with"][key].get<std::vector<int32_t>>()
                                                   : concat(doc["prefix"], want, doc["suffix"]);
    const std::string want_text = s["decoded"].contains(key) ? s["decoded"][key].get<std::string>() : texts.reference[i];
    const std::string where = cat(name, " ", set, " line ", i + 1, " '", printable(texts.input[i]), "'");
    const auto got = tok.encode(texts.input[i], false);
    ASSERT_EQ(show(got), show(want)) << where << ": ids without special tokens";
    ASSERT_EQ(got, want) << where;
    const auto got_with = tok.encode(texts.input[i], true);
    ASSERT_EQ(show(got_with), show(want_with)) << where << ": ids with special tokens";
    ASSERT_EQ(tok.decode(got_with, true), want_text) << where << ": decode(skip_special_tokens=true)";
    if (set == "hostile") {  // skip_special_tokens=false is recorded for these only
      const std::string keep = s["decoded_keep"].contains(key) ? s["decoded_keep"][key].get<std::string>() : want_text;
      ASSERT_EQ(tok.decode(got_with, false), keep) << where << ": decode(skip_special_tokens=false)";
    }
  }
}

// The tokenizers checked on Multi30k and the hostile texts, and the variants checked on the latter.
const std::vector<std::string> kNames = {"bert-uncased", "bert-cased", "gpt2", "llama3", "qwen2", "llama2", "mistral"};
const std::vector<std::string> kAllNames = {"bert-uncased", "bert-cased", "gpt2",    "llama3",           "qwen2",
                                            "llama2",       "mistral",    "qwen2-added", "bert-keep-accents", "llama2-unk",
                                            "wordpiece-mix", "bpe-mix"};

class HfTokenizerFixture : public ::testing::TestWithParam<std::string> {
 protected:
  static json expected(const std::string& name) { return read_gzip_json(kDir / name / "expected.json.gz"); }
  static json base_of(const json& doc) { return doc.contains("same_as") ? expected(doc["same_as"]) : json(); }

  void check_all(const HfTokenizer& tok, const std::string& name, bool corpora) {
    const json doc = expected(name), base = base_of(doc);
    if (!corpora) return check_set(tok, name, "hostile", doc, base, hostile_texts());
    const fs::path data = shared_data();
    if (!fs::exists(data / "multi30k")) GTEST_SKIP() << "no Multi30k test sets under " << data.string();
    for (const char* set : {"en", "de", "fr", "cs"}) {
      check_set(tok, name, set, doc, base, corpus_texts(data / doc["sets"][set]["file"].get<std::string>()));
      if (HasFatalFailure()) return;
    }
  }
};

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
}

TEST_P(HfTokenizerFixture, HostileTextsAsHuggingFace) { check_all(load(GetParam()), GetParam(), false); }

// Random id lists (special and byte tokens among them) decoded both ways.
TEST_P(HfTokenizerFixture, DecodeAsHuggingFace) {
  const HfTokenizer tok = load(GetParam());
  const json doc = expected(GetParam());
  ASSERT_FALSE(doc["decode"].empty());
  for (const auto& c : doc["decode"]) {
    const auto ids = c[0].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.decode(ids, true), c[1].get<std::string>()) << GetParam() << " " << show(ids) << " skipping specials";
    EXPECT_EQ(tok.decode(ids, false), c[2].get<std::string>()) << GetParam() << " " << show(ids);
  }
}

// The normalizer and pre-tokenizer alone: the pieces of each hostile text, where the regexes'
// splits show even when the model's merges would hide a difference.
TEST_P(HfTokenizerFixture, PreTokenizerAsHuggingFace) {
  const json doc = expected(GetParam());
  const json spec = json::parse(tokenizer_json(GetParam()));
  const hf::Where where{GetParam(), ""};
  const auto normalizer = hf::make_normalizer(spec["normalizer"], where);
  const auto pre_tokenizer = hf::make_pre_tokenizer(spec["pre_tokenizer"], where);
  ASSERT_EQ(doc["pre_tokenized"].is_null(), pre_tokenizer == nullptr);
  if (!pre_tokenizer) return;
  const Texts texts = hostile_texts();
  for (size_t i = 0; i < texts.reference.size(); ++i) {
    if (doc["pre_tokenized"][i].is_null()) continue;
    const std::string text = normalizer ? normalizer->normalize(texts.reference[i]) : texts.reference[i];
    // Encoding never pre-tokenizes empty text (pre_tokenize_str("") differs: Metaspace gives "▁").
    if (text.empty()) continue;
    std::vector<std::string> got;
    for (const auto& p : pre_tokenizer->pre_tokenize({{text, true}})) got.push_back(p.text);
    ASSERT_EQ(got, doc["pre_tokenized"][i].get<std::vector<std::string>>())
        << GetParam() << " hostile line " << i + 1 << " '" << printable(texts.input[i]) << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(All, HfTokenizerFixture, ::testing::ValuesIn(kAllNames), test_name);

class HfTokenizerCorpus : public HfTokenizerFixture {};
TEST_P(HfTokenizerCorpus, Multi30kAsHuggingFace) { check_all(load(GetParam()), GetParam(), true); }
INSTANTIATE_TEST_SUITE_P(All, HfTokenizerCorpus, ::testing::ValuesIn(kNames), test_name);

// BERT's slow-tokenizer folder (vocab.txt and tokenizer_config.json's options) tokenizes as the
// fast tokenizer that transformers converts it to.
class WordPieceVocabFixture : public HfTokenizerFixture {};

HfTokenizer load_vocab_txt(const std::string& name) {
  const json config = json::parse(read_file(kDir / name / "tokenizer_config.json"));
  std::optional<bool> strip;
  if (config.contains("strip_accents") && !config["strip_accents"].is_null()) strip = config["strip_accents"].get<bool>();
  return HfTokenizer::from_wordpiece_vocab(read_file(kDir / name / "vocab.txt"), config.value("do_lower_case", true),
                                           strip, config.value("tokenize_chinese_chars", true), name + "/vocab.txt");
}

TEST_P(WordPieceVocabFixture, HostileTextsAsTheFastTokenizer) {
  check_all(load_vocab_txt(GetParam()), GetParam(), false);
}


TEST_P(WordPieceVocabFixture, DecodeAsTheFastTokenizer) {
  const HfTokenizer tok = load_vocab_txt(GetParam());
  const json doc = expected(GetParam());
  ASSERT_FALSE(doc["decode"].empty());
  for (const auto& c : doc["decode"]) {
    const auto ids = c[0].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.decode(ids, true), c[1].get<std::string>()) << GetParam() << " " << show(ids) << " skipping specials";
    EXPECT_EQ(tok.decode(ids, false), c[2].get<std::string>()) << GetParam() << " " << show(ids);
  }
}

INSTANTIATE_TEST_SUITE_P(Bert, WordPieceVocabFixture,
                         ::testing::Values("bert-uncased", "bert-cased", "bert-keep-accents"), test_name);

class WordPieceVocabCorpus : public HfTokenizerFixture {};
TEST_P(WordPieceVocabCorpus, Multi30kAsTheFastTokenizer) { check_all(load_vocab_txt(GetParam()), GetParam(), true); }
INSTANTIATE_TEST_SUITE_P(Bert, WordPieceVocabCorpus, ::testing::Values("bert-uncased", "bert-cased"), test_name);

}  // namespace
}  // namespace tfm
