// Input text: UTF-8 checks and repair, trimming, reading parallel files with the documented
// skipping rules, and the SentencePiece vocabulary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>


#include "core/error.h"
#include "data/parallel_corpus.h"
#include "data/text.h"
#include "data/vocab.h"
#include "testing/fixture.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

std::string temp_file(const std::string& name, const std::string& contents) {
  const fs::path p = testing::temp_path(name);
  std::ofstream(p, std::ios::binary) << contents;
  return p.string();
}

TEST(Text, Utf8Validity) {
  EXPECT_TRUE(valid_utf8("plain ascii"));
  EXPECT_TRUE(valid_utf8("Müller straße 日本 😀"));
  EXPECT_FALSE(valid_utf8("\xC3"));              // truncated sequence
  EXPECT_FALSE(valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(valid_utf8("a\xFFz"));
  EXPECT_EQ(repair_utf8("a\xFFz\xC3"), "a\xEF\xBF\xBDz\xEF\xBF\xBD");
  EXPECT_EQ(utf8_length("Müller"), 6);
}

TEST(Text, Trim) {
  EXPECT_EQ(trim("  a b \r\n"), "a b");
  EXPECT_EQ(trim("\t\r\n "), "");
  EXPECT_EQ(trim("x"), "x");
}

TEST(ParallelCorpus, SkipsAndCountsBadPairs) {
  const std::string src = temp_file("src", "good one\r\n\nthis line is far too long for the limit\nbad \xFF utf8\n  spaced  \n");
  const std::string tgt = temp_file("tgt", "gut eins\r\nleer\nzu lang\nschlecht\nmit Raum\n");
  CorpusStats stats;
  const auto pairs = read_parallel(src, tgt, 20, &stats);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].source, "good one");
  EXPECT_EQ(pairs[0].target, "gut eins");  // CR stripped
  EXPECT_EQ(pairs[1].source, "spaced");
  EXPECT_EQ(stats.lines, 5);
  EXPECT_EQ(stats.kept, 2);
  EXPECT_EQ(stats.empty, 1);
  EXPECT_EQ(stats.too_long, 1);
  EXPECT_EQ(stats.invalid_utf8, 1);
  EXPECT_NE(stats.summary().find("1 invalid UTF-8"), std::string::npos);
}

TEST(ParallelCorpus, DifferentLineCountsNameBothCounts) {
  const std::string a = temp_file("a", "1\n2\n3\n"), b = temp_file("b", "1\n2\n");
  try {
    read_parallel(a, b, 0, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("has 3 lines"), std::string::npos) << m;
    EXPECT_NE(m.find("has 2"), std::string::npos) << m;
  }
  EXPECT_THROW(read_parallel(a, "/nonexistent/file", 0, nullptr), Error);
}

TEST(Vocab, TrainsEncodesDecodesAndRoundTrips) {
  std::vector<std::string> sentences;
  for (int i = 0; i < 300; ++i)
    sentences.push_back("the cat number " + std::to_string(i) + " sat on the mat with " + std::to_string(i * 7));
  VocabOptions o;
  o.size = 60;
  const Vocab v = Vocab::train(sentences, o);
  EXPECT_LE(v.size(), 60);
  EXPECT_EQ(v.piece(0), "<pad>");
  EXPECT_EQ(v.piece(3), "</s>");
  const std::vector<int32_t> ids = v.encode("the cat sat on the mat 42");
  for (int32_t id : ids) EXPECT_GT(id, 3);
  EXPECT_EQ(v.decode(ids), "the cat sat on the mat 42");
  const std::string path = temp_file("vocab.model", "");
  v.save(path);
  const Vocab w = Vocab::load(path);
  EXPECT_EQ(w.encode("the cat sat on the mat 42"), ids);
  EXPECT_THROW(Vocab::load(temp_file("junk.model", "not a model")), Error);
  EXPECT_THROW(v.piece(1000), Error);
}

// A vocabulary smaller than the text's distinct characters: the size and the count, in this
// project's words (not SentencePiece's "Vocabulary size is smaller than required_chars").
TEST(Vocab, TooSmallForTheCharactersSaysSo) {
  const std::vector<std::string> sentences = {"abcdefghijklmnopqrstuvwxyz", "the quick brown fox"};
  VocabOptions o;
  o.size = 10;
  try {
    Vocab::train(sentences, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("vocabulary size 10 is too small for the training text's"), std::string::npos) << m;
    EXPECT_NE(m.find("distinct characters"), std::string::npos) << m;
    EXPECT_EQ(m.find("required_chars"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tfm
