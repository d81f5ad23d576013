// The vocabulary shortlist (decode/shortlist.h): what it selects from a corpus small enough to count
// by hand, its file round trip, the errors a malformed file or option gets, and that a truncated or
// corrupted file is refused. Decoding with a shortlist is checked in decode_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "decode/shortlist.h"
#include "io/atomic_file.h"
#include "io/checksum.h"
#include "testing/errors.h"
#include "testing/fixture.h"

namespace tfm {
namespace {

using testing::expect_error;

// Sentence pairs:        4 5 → 10 11,   4 6 → 10 12,   4 5 5 → 11 11 13
// Pair counts c(s):       4: 3, 5: 2, 6: 1
// c(4, t): 10: 2, 11: 2, 12: 1, 13: 1;  c(5, t): 10: 1, 11: 2, 13: 1;  c(6, t): 10: 1, 12: 1
// Target token counts:    11: 3, 10: 2, 12: 1, 13: 1
Shortlist hand_counted(int64_t per_source, int64_t frequent) {
  return Shortlist::build({{4, 5}, {4, 6}, {4, 5, 5}}, {{10, 11}, {10, 12}, {11, 11, 13}}, 16,
                          {per_source, frequent}, "0123456789abcdef");
}

TEST(Shortlist, RanksTargetsByCooccurrenceAndKeepsTheMostFrequent) {
  const Shortlist s = hand_counted(2, 2);
  EXPECT_EQ(s.frequent(), (std::vector<int32_t>{11, 10}));
  EXPECT_EQ(s.targets_of(4), (std::vector<int32_t>{10, 11}));  // tie at 2: lower id first
  EXPECT_EQ(s.targets_of(5), (std::vector<int32_t>{11, 10}));  // 11 twice, 10 and 13 once
  EXPECT_EQ(s.targets_of(6), (std::vector<int32_t>{10, 12}));
  EXPECT_TRUE(s.targets_of(7).empty());
  expect_error([&] { s.targets_of(16); }, {"source token id 16"});
  EXPECT_EQ(hand_counted(3, 1).targets_of(4), (std::vector<int32_t>{10, 11, 12}));
  EXPECT_EQ(hand_counted(3, 1).frequent(), (std::vector<int32_t>{11}));
}

TEST(Shortlist, SelectsTheUnionForABatchSortedWithTheAlwaysTokens) {
  const Shortlist s = hand_counted(2, 1);
  EXPECT_EQ(s.select({{6}}, {3}), (std::vector<int32_t>{3, 10, 11, 12}));
  EXPECT_EQ(s.select({{6}, {5, 5}}, {3}), (std::vector<int32_t>{3, 10, 11, 12}));
  EXPECT_EQ(s.select({{7}}, {3}), (std::vector<int32_t>{3, 11}));  // unseen token: frequent only
  EXPECT_EQ(hand_counted(1, 0).select({{5}, {6}}, {}), (std::vector<int32_t>{10, 11}));
  expect_error([&] { s.select({{16}}, {3}); }, {"source token id 16", "[0, 16)"});
}

TEST(Shortlist, SavesAndLoadsTheSameShortlist) {
  const std::string path = testing::temp_path("shortlist_roundtrip.txt");
  const Shortlist s = hand_counted(2, 2);
  s.save(path);
  const Shortlist r = Shortlist::load(path);
  EXPECT_EQ(r.vocab_size(), 16);
  EXPECT_EQ(r.vocab_fingerprint(), "0123456789abcdef");
  EXPECT_EQ(r.frequent(), s.frequent());
  for (int32_t t = 0; t < 16; ++t) EXPECT_EQ(r.targets_of(t), s.targets_of(t)) << "source " << t;
  // Without a fingerprint.
  Shortlist::build({{4}}, {{5}}, 8, {}, "").save(path);
  EXPECT_EQ(Shortlist::load(path).vocab_fingerprint(), "");
  std::filesystem::remove(path);
}

// A version-2 file of the given header fields and lines after the header, with the right number of
// lines and checksum, as save() writes it: what the parser sees once the file is known to be whole.
std::string v2_file(const std::string& fields, const std::string& lines) {
  const int64_t count = std::count(lines.begin(), lines.end(), '\n');
  std::string text = "tfm-shortlist 2\n" + fields + "lines " + std::to_string(count) + "\nchecksum " +
                     format_checksum(0) + "\n" + lines;
  const size_t digits = text.find("checksum xxh3-64:") + std::string("checksum xxh3-64:").size();
  text.replace(digits, kChecksumDigits, format_checksum(checksum_of(text)).substr(kChecksumPrefix.size()));
  return text;
}

TEST(Shortlist, RejectsMalformedFiles) {
  const std::string path = testing::temp_path("shortlist_bad.txt");
  auto with = [&](const std::string& text) {
    std::ofstream(path) << text;
    return path;
  };
  const std::string head = "vocab_size 16\nvocab_fingerprint -\n";
  expect_error([&] { Shortlist::load(with("hello\n")); }, {"not a shortlist file", "hello", "tfm-shortlist 2"});
  expect_error([&] { Shortlist::load(with("tfm-shortlist 2\nvocab_size many\n")); }, {"'many' is not a vocabulary size"});
  expect_error([&] { Shortlist::load(with("tfm-shortlist 2\nvocab_size 16\n")); }, {"ends before its vocab_fingerprint"});
  expect_error([&] { Shortlist::load(with("tfm-shortlist 2\n" + head + "lines 2\n")); }, {"ends before its checksum"});
  expect_error([&] { Shortlist::load(with("tfm-shortlist 2\n" + head + "lines 2\nchecksum 12\n")); },
               {"line 5", "'12' is not a checksum"});
  expect_error([&] { Shortlist::load(with(v2_file(head, "frequent 3 x\n"))); }, {"line 6", "'x' is not a token id"});
  expect_error([&] { Shortlist::load(with(v2_file(head, "frequent 3\n5\t6 16\n"))); }, {"line 7", "token id 16", "[0, 16)"});
  expect_error([&] { Shortlist::load(with(v2_file(head, "frequent 3\n5 6 7\n"))); }, {"line 7 has no tab"});
  expect_error([&] { Shortlist::load(with(v2_file(head, "frequent 3\n5\t6\n5\t7\n"))); },
               {"line 8", "source id 5 has a second line"});
  expect_error([&] { Shortlist::load(with(v2_file(head, "frequent -1\n"))); }, {"token id -1"});
  expect_error([&] { Shortlist::load(with(v2_file(head, "frequent 3\n5\t\n5\t7\n"))); },
               {"line 8", "source id 5 has a second line"});
  expect_error([&] { Shortlist::load(with(v2_file(head, "3 4\n"))); }, {"line 6 must be 'frequent ID...'"});
  expect_error([&] { Shortlist::load(path + ".missing"); }, {".missing"});
  // A size other than the model's is refused before the file's lists are allocated.
  expect_error([&] { Shortlist::load(with(v2_file("vocab_size 1000000000\nvocab_fingerprint -\n", "frequent\n")), 32); },
               {"vocabulary of 1000000000 tokens", "model has 32"});
  std::filesystem::remove(path);
}

// A shortlist cut anywhere (a full disk, an interrupted copy) is refused naming the file: before the
// number of lines and the checksum, a cut at a line's end was read as a shorter, valid shortlist.
TEST(Shortlist, EveryTruncationIsRefused) {
  const std::string path = testing::temp_path("shortlist_cut.txt");
  hand_counted(2, 2).save(path);
  const std::string text = read_file(path);
  for (size_t n = 0; n < text.size(); ++n) {
    { std::ofstream(path, std::ios::binary) << text.substr(0, n); }
    const std::string msg = testing::error_of([&] { Shortlist::load(path); });
    ASSERT_NE(msg, "") << "a shortlist cut to " << n << " of " << text.size() << " bytes was accepted";
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
  }
  // Cut at the end of a line of the lists: the message says so.
  { std::ofstream(path, std::ios::binary) << text.substr(0, text.rfind('\n', text.size() - 2) + 1); }
  expect_error([&] { Shortlist::load(path); }, {"truncated: 3 of the 4 lines after the header are there"});
  { std::ofstream(path, std::ios::binary) << text.substr(0, text.size() - 3); }
  expect_error([&] { Shortlist::load(path); }, {"truncated: its last line (9) has no end"});
  { std::ofstream(path, std::ios::binary) << text.substr(0, text.find("\nfrequent")); }
  expect_error([&] { Shortlist::load(path); }, {"truncated: its last line (5) has no end"});
  std::filesystem::remove(path);
}

// A flipped bit anywhere is refused (in a list it would change a token id). One bit per byte, a
// different one from byte to byte.
TEST(Shortlist, AFlipInAnyByteIsRefused) {
  const std::string path = testing::temp_path("shortlist_flip.txt");
  hand_counted(2, 2).save(path);
  const std::string text = read_file(path);
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const int bit = static_cast<int>(pos % 8);
    std::string b = text;
    b[pos] = static_cast<char>(b[pos] ^ (1 << bit));
    { std::ofstream(path, std::ios::binary) << b; }
    ASSERT_NE(testing::error_of([&] { Shortlist::load(path); }), "")
        << "a flip of bit " << bit << " of byte " << pos << " ('" << text[pos] << "') was accepted";
  }
  // A changed id in a list: the checksum names both values.
  std::string b = text;
  b[text.rfind('\t') + 1] ^= 1;  // 10 → 00 or similar, still a valid id
  { std::ofstream(path, std::ios::binary) << b; }
  expect_error([&] { Shortlist::load(path); },
               {path.c_str(), "checksum mismatch: the header records xxh3-64:", "but the file hashes to xxh3-64:",
                "rebuild it with `transformer shortlist`"});
  std::filesystem::remove(path);
}

// Version-1 files record neither their length nor a checksum: refused, with the remedy.
TEST(Shortlist, VersionOneFilesAreRefusedWithTheRemedy) {
  const std::string path = testing::temp_path("shortlist_v1.txt");
  std::ofstream(path) << "tfm-shortlist 1\nvocab_size 16\nvocab_fingerprint -\nfrequent 3\n5\t6\n";
  expect_error([&] { Shortlist::load(path); },
               {path.c_str(), "format version 1", "rebuild it with `transformer shortlist`"});
  std::filesystem::remove(path);
}

TEST(Shortlist, RefusesAnotherVocabularyAndBadOptions) {
  const Shortlist s = hand_counted(2, 2);
  EXPECT_NO_THROW(s.check_vocabulary(16, "0123456789abcdef", "m"));
  EXPECT_NO_THROW(s.check_vocabulary(16, "", "m"));  // a model that records no fingerprint
  expect_error([&] { s.check_vocabulary(32, "", "m.safetensors"); }, {"16 tokens", "'m.safetensors' has 32"});
  expect_error([&] { s.check_vocabulary(16, "fedcba9876543210", "m"); }, {"another vocabulary", "fedcba9876543210"});
  expect_error([] { Shortlist::build({{1}}, {{2}}, 8, {-1, 100}, ""); }, {"per source token", "-1"});
  expect_error([] { Shortlist::build({{1}}, {{2}}, 8, {0, 0}, ""); }, {"got 0 and 0"});
  expect_error([] { Shortlist::build({{1}}, {{2}, {3}}, 8, {}, ""); }, {"1 source sentences but 2 target"});
  expect_error([] { Shortlist::build({{1}}, {{9}}, 8, {}, ""); }, {"target sentence 1", "token id 9"});
}

}  // namespace
}  // namespace tfm
