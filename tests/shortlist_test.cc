// The vocabulary shortlist (decode/shortlist.h): what it selects from a corpus small enough to count
// by hand, its file round trip, and the errors a malformed file or option gets. Decoding with a
// shortlist is checked in decode_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "decode/shortlist.h"
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

TEST(Shortlist, RejectsMalformedFiles) {
  const std::string path = testing::temp_path("shortlist_bad.txt");
  auto with = [&](const std::string& text) {
    std::ofstream(path) << text;
    return path;
  };
  const std::string head = "tfm-shortlist 1\nvocab_size 16\nvocab_fingerprint -\n";
  expect_error([&] { Shortlist::load(with("hello\n")); }, {"not a shortlist file", "hello"});
  expect_error([&] { Shortlist::load(with("tfm-shortlist 1\nvocab_size many\n")); }, {"'many' is not a vocabulary size"});
  expect_error([&] { Shortlist::load(with("tfm-shortlist 1\nvocab_size 16\n")); }, {"ends before its vocab_fingerprint"});
  expect_error([&] { Shortlist::load(with(head + "frequent 3 x\n")); }, {"line 4", "'x' is not a token id"});
  expect_error([&] { Shortlist::load(with(head + "frequent 3\n5\t6 16\n")); }, {"line 5", "token id 16", "[0, 16)"});
  expect_error([&] { Shortlist::load(with(head + "frequent 3\n5 6 7\n")); }, {"line 5 has no tab"});
  expect_error([&] { Shortlist::load(with(head + "frequent 3\n5\t6\n5\t7\n")); }, {"line 6", "source id 5 has a second line"});
  expect_error([&] { Shortlist::load(with(head + "frequent -1\n")); }, {"token id -1"});
  expect_error([&] { Shortlist::load(with(head + "frequent 3\n5\t\n5\t7\n")); }, {"line 6", "source id 5 has a second line"});
  expect_error([&] { Shortlist::load(path + ".missing"); }, {".missing"});
  // A size other than the model's is refused before the file's lists are allocated.
  expect_error([&] { Shortlist::load(with("tfm-shortlist 1\nvocab_size 1000000000\n"), 32); },
               {"vocabulary of 1000000000 tokens", "model has 32"});
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
