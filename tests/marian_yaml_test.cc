// Marian's YAML files (io/marian_yaml.h): vocabularies written here exactly as Marian writes them
// (yaml-cpp's emitter) come back piece for piece, the awkward pieces included; broken ones throw
// naming the file, the piece, the id and the line. The model configuration's accessors convert
// each type and refuse the wrong one naming the key and the value.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/marian_yaml.h"
#include "testing/errors.h"
#include "testing/fixture.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;

// A vocabulary file as Marian's DefaultVocab writes it: a YAML::Emitter, BeginMap, then Key piece
// and Value id for each piece, EndMap. `ids[i]` is the id of pieces[i].
std::string marian_vocab_text(const std::vector<std::string>& pieces, const std::vector<int>& ids) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (size_t i = 0; i < pieces.size(); ++i) out << YAML::Key << pieces[i] << YAML::Value << ids[i];
  out << YAML::EndMap;
  EXPECT_TRUE(out.good()) << out.GetLastError();
  return out.c_str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Pieces that YAML would read as something else unless quoted or escaped, and pieces beyond ASCII.
const std::vector<std::string> kTrickyPieces = {"</s>",
                                                "<unk>",
                                                "\xe2\x96\x81the",
                                                "\xe2\x96\x81",
                                                "yes",
                                                "no",
                                                "Yes",
                                                "NO",
                                                "y",
                                                "n",
                                                "on",
                                                "Off",
                                                "true",
                                                "False",
                                                "null",
                                                "Null",
                                                "NULL",
                                                "~",
                                                ":",
                                                "? ",
                                                "?",
                                                "- ",
                                                "-",
                                                "--",
                                                "---",
                                                "...",
                                                "#",
                                                "a #b",
                                                "a: b",
                                                "'",
                                                "\"",
                                                "\\",
                                                "\\n",
                                                "\x1f",
                                                "\t",
                                                "\n",
                                                "\r",
                                                "\x7f",
                                                " ",
                                                "  lead",
                                                "trail ",
                                                "[",
                                                "]",
                                                "{",
                                                "}",
                                                ",",
                                                "&a",
                                                "*a",
                                                "!",
                                                "!!str",
                                                "%",
                                                "@",
                                                "`",
                                                "|",
                                                ">",
                                                "<<",
                                                "=",
                                                "1",
                                                "-1",
                                                "007",
                                                "0x10",
                                                "1e3",
                                                "0.5",
                                                ".inf",
                                                ".nan",
                                                "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",  // 日本語
                                                "\xd0\x9f\xd1\x80\xd0\xb8",              // При
                                                "\xf0\x9f\x98\x80",                      // an emoji (4 bytes)
                                                "\xc2\xa0",                              // no-break space
                                                "\xc2\x85",      // NEL, a line break to YAML 1.1
                                                "\xe2\x80\xa8",  // line separator
                                                "\xef\xbb\xbf",  // byte order mark
                                                "x\xe2\x96\x81y",
                                                "''",
                                                "\"\"",
                                                "a'b",
                                                "a\"b"};

TEST(MarianVocab, TrickyPiecesRoundTripThroughMariansEmitter) {
  std::vector<int> ids(kTrickyPieces.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i);
  const std::string path = testing::temp_path("tricky.yml");
  write_text(path, marian_vocab_text(kTrickyPieces, ids));
  const std::vector<std::string> got = read_marian_vocab(path);
  ASSERT_EQ(got.size(), kTrickyPieces.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], kTrickyPieces[i]) << "id " << i;
  fs::remove(path);
}

TEST(MarianVocab, PiecesComeInIdOrderWhateverTheFileOrder) {
  const std::vector<std::string> pieces = {"c", "</s>", "b", "<unk>", "a"};
  const std::vector<std::string> got = parse_marian_vocab(marian_vocab_text(pieces, {4, 0, 3, 1, 2}), "v.yml");
  EXPECT_EQ(got, (std::vector<std::string>{"</s>", "<unk>", "a", "b", "c"}));
  // Written by hand, as in OPUS-MT's files.
  EXPECT_EQ(parse_marian_vocab("\"</s>\": 0\n\"<unk>\": 1\n\xe2\x96\x81the: 2\n\",\": 3\n", "v.yml"),
            (std::vector<std::string>{"</s>", "<unk>", "\xe2\x96\x81the", ","}));
}

// Marian reads a key with yaml-cpp's as<std::string>(): an unquoted null key is the piece "null".
TEST(MarianVocab, UnquotedNullKeyIsReadAsMarianReadsIt) {
  EXPECT_EQ(parse_marian_vocab("~: 1\nx: 0\n", "v.yml"), (std::vector<std::string>{"x", "null"}));
  expect_error([] { parse_marian_vocab("~: 0\n\"null\": 1\n", "v.yml"); }, {"piece 'null' appears twice"});
}

TEST(MarianVocab, BrokenVocabulariesNameTheFilePieceIdAndLine) {
  expect_error([] { parse_marian_vocab("a: 0\nb: x\n", "v.yml"); },
               {"v.yml (line 2): the id of piece 'b' is 'x', not a non-negative integer"});
  expect_error([] { parse_marian_vocab("a: -1\n", "v.yml"); }, {"piece 'a' is '-1', not a non-negative integer"});
  expect_error([] { parse_marian_vocab("a: 1.0\n", "v.yml"); }, {"piece 'a' is '1.0', not a non-negative integer"});
  expect_error([] { parse_marian_vocab("a: 0\nb: 2\n", "v.yml"); },
               {"v.yml (line 2): piece 'b' has id 2, out of range: the 2 pieces must have the ids 0..1 with no gap"});
  expect_error([] { parse_marian_vocab("a: 99999999999999999999999\n", "v.yml"); },
               {"piece 'a' has id 99999999999999999999999, out of range"});
  expect_error([] { parse_marian_vocab("a: 0\nb: 1\nc: 0\n", "v.yml"); },
               {"v.yml (line 3): id 0 is given to piece 'a' (line 1) and to piece 'c'"});
  expect_error([] { parse_marian_vocab("a: 0\nb: 1\na: 2\n", "v.yml"); },
               {"v.yml (line 3): piece 'a' appears twice, with ids 0 and 2"});
  expect_error([] { parse_marian_vocab("a: [0]\n", "v.yml"); }, {"the id of piece 'a' is a sequence, not an integer"});
  expect_error([] { parse_marian_vocab("? [a]\n: 0\n", "v.yml"); },
               {"v.yml (line 1): a key is a sequence, not a piece"});
  expect_error([] { parse_marian_vocab("- a\n- b\n", "v.yml"); },
               {"v.yml: a Marian vocabulary is a YAML mapping", "this is a sequence"});
  expect_error([] { parse_marian_vocab("", "v.yml"); }, {"v.yml: a Marian vocabulary", "this is empty"});
  expect_error([] { parse_marian_vocab("a: 0\nb: [1\n", "v.yml"); }, {"v.yml (line", "not valid YAML"});
  expect_error([] { parse_marian_vocab("\"\x1f\": 1\n", "v.yml"); }, {"piece '\\x1f' has id 1, out of range"});
  // A piece that is not valid UTF-8 would fail later, writing vocabulary.json, naming neither.
  expect_error([] { parse_marian_vocab("a: 0\nb\xff\xfe: 1\n", "v.yml"); },
               {"v.yml (line 2): piece 'b\\xff\\xfe' (id 1) is not valid UTF-8"});
  expect_error([] { read_marian_vocab(testing::temp_path("missing.yml")); },
               {"cannot open the Marian vocabulary", "missing.yml"});
}

// A configuration as Marian stores it in "special:model.yml": emitted by yaml-cpp, NUL-terminated.
const std::string kConfig = std::string(
                                "type: transformer\n"
                                "dim-vocabs:\n"
                                "  - 58101\n"
                                "  - 58101\n"
                                "dim-emb: 512\n"
                                "enc-depth: 6\n"
                                "dec-depth: 6\n"
                                "transformer-heads: 8\n"
                                "transformer-dim-ffn: 2048\n"
                                "transformer-ffn-activation: swish\n"
                                "transformer-preprocess: \"\"\n"
                                "transformer-postprocess: dan\n"
                                "transformer-postprocess-emb: d\n"
                                "tied-embeddings-all: true\n"
                                "tied-embeddings: false\n"
                                "transformer-no-projection: False\n"
                                "transformer-dropout: 0.1\n"
                                "optimizer-params: [0.9, 0.98, 1e-09]\n"
                                "precision:\n"
                                "  - float32\n"
                                "  - float32\n"
                                "ulr: no\n"
                                "shifted: +5\n"
                                "offset: -3\n"
                                "big: 0x10\n"
                                "eps: 1e-09\n"
                                "limit: .inf\n"
                                "word: inf\n"
                                "empty:\n"
                                "nested: {a: 1}\n"
                                "vocab-pairs: [[1, 2], [3, 4]]\n"
                                "bad-list: [1, x]\n"
                                "version: v1.9.56 \"quoted\" 2021\n") +
                            '\0' + "garbage: after the NUL\n";

TEST(MarianConfig, ReadsEachType) {
  const MarianConfig c = parse_marian_config(kConfig, "model.npz: special:model.yml");
  EXPECT_EQ(c.where(), "model.npz: special:model.yml");
  EXPECT_FALSE(c.has("garbage"));
  EXPECT_TRUE(c.has("empty"));
  EXPECT_EQ(c.keys().size(), 29u);
  EXPECT_EQ(c.get_string("type"), "transformer");
  EXPECT_EQ(c.get_ints("dim-vocabs"), (std::vector<int64_t>{58101, 58101}));
  EXPECT_EQ(c.get_int("dim-emb"), 512);
  EXPECT_EQ(c.get_int("enc-depth"), 6);
  EXPECT_EQ(c.get_int("transformer-dim-ffn"), 2048);
  EXPECT_EQ(c.get_string("transformer-ffn-activation"), "swish");
  EXPECT_EQ(c.get_string("transformer-preprocess"), "");
  EXPECT_EQ(c.get_string("transformer-postprocess"), "dan");
  EXPECT_TRUE(c.get_bool("tied-embeddings-all"));
  EXPECT_FALSE(c.get_bool("tied-embeddings"));
  EXPECT_FALSE(c.get_bool("transformer-no-projection"));
  EXPECT_FALSE(c.get_bool("ulr"));
  EXPECT_DOUBLE_EQ(c.get_double("transformer-dropout"), 0.1);
  EXPECT_DOUBLE_EQ(c.get_double("dim-emb"), 512.0);
  EXPECT_DOUBLE_EQ(c.get_double("eps"), 1e-9);
  EXPECT_EQ(c.get_double("limit"), INFINITY);
  EXPECT_EQ(c.get_strings("optimizer-params"), (std::vector<std::string>{"0.9", "0.98", "1e-09"}));
  EXPECT_EQ(c.get_strings("precision"), (std::vector<std::string>{"float32", "float32"}));
  EXPECT_EQ(c.get_int("shifted"), 5);
  EXPECT_EQ(c.get_int("offset"), -3);
  EXPECT_EQ(c.get_string("version"), "v1.9.56 \"quoted\" 2021");
  EXPECT_EQ(c.value("dim-vocabs").line, 2);
  EXPECT_EQ(c.value("empty").kind, MarianConfig::Kind::Null);
  EXPECT_EQ(c.value("nested").kind, MarianConfig::Kind::Other);
  EXPECT_EQ(c.value("vocab-pairs").kind, MarianConfig::Kind::Other);

  // Fallbacks: for a missing or null key only.
  EXPECT_EQ(c.get_int("enc-cell-depth", 1), 1);
  EXPECT_EQ(c.get_string("empty", "none"), "none");
  EXPECT_TRUE(c.get_bool("output-omit-bias", true));
  EXPECT_DOUBLE_EQ(c.get_double("label-smoothing", 0.25), 0.25);
  EXPECT_EQ(c.get_int("dec-depth", 1), 6);
  expect_error([&] { c.get_int("type", 1); }, {"'type' is 'transformer', not an integer"});
}

TEST(MarianConfig, WrongTypesAndMissingKeysNameTheKeyValueAndLine) {
  const MarianConfig c = parse_marian_config(kConfig, "model.npz: special:model.yml");
  expect_error([&] { c.get_int("type"); },
               {"model.npz: special:model.yml (line 1): 'type' is 'transformer', not an integer"});
  expect_error([&] { c.get_bool("dim-emb"); }, {"(line 5): 'dim-emb' is '512', not a boolean"});
  expect_error([&] { c.get_double("type"); }, {"'type' is 'transformer', not a number"});
  expect_error([&] { c.get_double("word"); }, {"'word' is 'inf', not a number"});
  expect_error([&] { c.get_int("big"); }, {"'big' is '0x10', not an integer"});
  expect_error([&] { c.get_int("eps"); }, {"'eps' is '1e-09', not an integer"});
  expect_error([&] { c.get_int("dim-vocabs"); }, {"'dim-vocabs' is the sequence [58101, 58101], not an integer"});
  expect_error([&] { c.get_ints("dim-emb"); }, {"'dim-emb' is '512', not a sequence of integers"});
  expect_error([&] { c.get_ints("bad-list"); }, {"'bad-list' is the sequence [1, x]: item 'x' is not an integer"});
  expect_error([&] { c.get_ints("precision"); }, {"item 'float32' is not an integer"});
  expect_error([&] { c.get_string("empty"); }, {"'empty' is null (no value), not a string"});
  expect_error([&] { c.get_string("nested"); }, {"'nested' is a mapping or a nested sequence, not a string"});
  expect_error([&] { c.get_strings("vocab-pairs"); }, {"'vocab-pairs' is a mapping or a nested sequence"});
  expect_error([&] { c.get_int("enc-cell"); },
               {"model.npz: special:model.yml: no 'enc-cell' in the model's configuration"});
  expect_error([&] { c.value("enc-cell"); }, {"no 'enc-cell'"});
}

TEST(MarianConfig, BooleansAndIntegersAsYamlCppReadsThem) {
  const MarianConfig c =
      parse_marian_config("a: True\nb: YES\nc: Off\nd: y\ne: tRue\nf: 1\ng: 99999999999999999999\nh: '42'\n", "cfg");
  EXPECT_TRUE(c.get_bool("a"));
  EXPECT_TRUE(c.get_bool("b"));
  EXPECT_FALSE(c.get_bool("c"));
  EXPECT_TRUE(c.get_bool("d"));
  expect_error([&] { c.get_bool("e"); }, {"'e' is 'tRue', not a boolean"});
  expect_error([&] { c.get_bool("f"); }, {"'f' is '1', not a boolean"});
  expect_error([&] { c.get_int("g"); }, {"'g' is '99999999999999999999', not an integer"});
  EXPECT_EQ(c.get_int("h"), 42);  // quoted: Marian's as<int>() takes it too
}

TEST(MarianConfig, BrokenConfigurations) {
  expect_error([] { parse_marian_config("a: 1\na: 2\n", "cfg"); },
               {"cfg (line 2): option 'a' is given twice (first on line 1)"});
  expect_error([] { parse_marian_config(std::string("\0type: x", 8), "cfg"); },
               {"cfg: a Marian model configuration", "this is empty"});
  expect_error([] { parse_marian_config("- a\n", "cfg"); }, {"this is a sequence"});
  expect_error([] { parse_marian_config("type: transformer\ndim-emb: [512\n", "cfg"); },
               {"cfg (line", "not valid YAML"});
  expect_error([] { parse_marian_config("? [a]\n: 1\n", "cfg"); }, {"cfg (line 1): a key is a sequence"});
}

}  // namespace
}  // namespace tfm
