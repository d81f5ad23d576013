// The demo task's number words and dataset: hand-checked spellings in both languages, the rules as
// properties over all 1,000,000 numbers, and splits that are disjoint, aligned and reproducible.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "data/number_words.h"
#include "io/atomic_file.h"
#include "testing/errors.h"

namespace tfm {
namespace {

using testing::expect_error;

struct Example {
  int64_t n;
  const char* words;
};

// Written out by hand (not generated), checked against standard German grammar references.
const Example kGerman[] = {
    {0, "null"},
    {1, "eins"},  // alone: "eins"
    {2, "zwei"},
    {3, "drei"},
    {6, "sechs"},
    {7, "sieben"},
    {10, "zehn"},
    {11, "elf"},
    {12, "zwölf"},
    {13, "dreizehn"},
    {16, "sechzehn"},  // sechs → sech
    {17, "siebzehn"},  // sieben → sieb
    {19, "neunzehn"},
    {20, "zwanzig"},
    {21, "einundzwanzig"},  // units before tens; "ein" before "und"
    {26, "sechsundzwanzig"},
    {27, "siebenundzwanzig"},
    {30, "dreißig"},  // -ßig
    {31, "einunddreißig"},
    {42, "zweiundvierzig"},
    {55, "fünfundfünfzig"},
    {60, "sechzig"},
    {66, "sechsundsechzig"},
    {70, "siebzig"},
    {77, "siebenundsiebzig"},
    {80, "achtzig"},
    {99, "neunundneunzig"},
    {100, "einhundert"},
    {101, "einhunderteins"},  // "eins" at the very end, no "und" after "hundert"
    {111, "einhundertelf"},
    {116, "einhundertsechzehn"},
    {121, "einhunderteinundzwanzig"},
    {200, "zweihundert"},
    {342, "dreihundertzweiundvierzig"},
    {600, "sechshundert"},
    {700, "siebenhundert"},
    {999, "neunhundertneunundneunzig"},
    {1000, "eintausend"},
    {1001, "eintausendeins"},
    {1010, "eintausendzehn"},
    {1100, "eintausendeinhundert"},
    {1999, "eintausendneunhundertneunundneunzig"},
    {2021, "zweitausendeinundzwanzig"},
    {7000, "siebentausend"},
    {10000, "zehntausend"},
    {11000, "elftausend"},
    {12500, "zwölftausendfünfhundert"},
    {16000, "sechzehntausend"},
    {17000, "siebzehntausend"},
    {21000, "einundzwanzigtausend"},
    {30001, "dreißigtausendeins"},
    {70000, "siebzigtausend"},
    {100000, "einhunderttausend"},
    {100001, "einhunderttausendeins"},
    {101000, "einhunderteintausend"},  // "ein" before "tausend" even after "hundert"
    {101101, "einhunderteintausendeinhunderteins"},
    {121121, "einhunderteinundzwanzigtausendeinhunderteinundzwanzig"},
    {600600, "sechshunderttausendsechshundert"},
    {700017, "siebenhunderttausendsiebzehn"},
    {999999, "neunhundertneunundneunzigtausendneunhundertneunundneunzig"},
};

const Example kEnglish[] = {
    {0, "zero"},
    {1, "one"},
    {7, "seven"},
    {11, "eleven"},
    {12, "twelve"},
    {13, "thirteen"},
    {14, "fourteen"},
    {15, "fifteen"},
    {18, "eighteen"},
    {19, "nineteen"},
    {20, "twenty"},
    {21, "twenty-one"},
    {30, "thirty"},
    {40, "forty"},
    {42, "forty-two"},
    {50, "fifty"},
    {90, "ninety"},
    {99, "ninety-nine"},
    {100, "one hundred"},
    {101, "one hundred one"},  // American: no "and"
    {110, "one hundred ten"},
    {342, "three hundred forty-two"},
    {999, "nine hundred ninety-nine"},
    {1000, "one thousand"},
    {1001, "one thousand one"},
    {1100, "one thousand one hundred"},  // not "eleven hundred"
    {2021, "two thousand twenty-one"},
    {12500, "twelve thousand five hundred"},
    {21000, "twenty-one thousand"},
    {80080, "eighty thousand eighty"},
    {100000, "one hundred thousand"},
    {101101, "one hundred one thousand one hundred one"},
    {999999, "nine hundred ninety-nine thousand nine hundred ninety-nine"},
};

TEST(NumberWords, GermanExamples) {
  EXPECT_GE(std::size(kGerman), 40u);
  for (const Example& e : kGerman) EXPECT_EQ(german_number(e.n), e.words) << "n = " << e.n;
}

TEST(NumberWords, EnglishExamples) {
  for (const Example& e : kEnglish) EXPECT_EQ(english_number(e.n), e.words) << "n = " << e.n;
}

TEST(NumberWords, OutOfRangeNamesTheValue) {
  expect_error([] { german_number(-1); }, {"german_number", "-1", "999999"});
  expect_error([] { german_number(1000000); }, {"german_number", "1000000"});
  expect_error([] { english_number(-7); }, {"english_number", "-7"});
  expect_error([] { english_number(1234567); }, {"english_number", "1234567"});
}

// Over every number: both spellings are injective (a translation task with two sources for one
// target would cap accuracy below 100%), German has no spaces and "eins" only at the end, and both
// are built from the thousands and the rest as the rules say.
TEST(NumberWords, AllNumbersInjectiveAndRegular) {
  std::unordered_set<std::string> en, de;
  en.reserve(kMaxNumberWord + 1);
  de.reserve(kMaxNumberWord + 1);
  std::vector<std::string> de_below_1000, en_below_1000;
  for (int64_t n = 0; n <= kMaxNumberWord; ++n) {
    const std::string e = english_number(n), g = german_number(n);
    ASSERT_TRUE(en.insert(e).second) << "english_number(" << n << ") = '" << e << "' is not unique";
    ASSERT_TRUE(de.insert(g).second) << "german_number(" << n << ") = '" << g << "' is not unique";
    ASSERT_EQ(g.find(' '), std::string::npos) << n << ": " << g;
    ASSERT_EQ(g.find('-'), std::string::npos) << n << ": " << g;
    const size_t eins = g.find("eins");
    ASSERT_TRUE(eins == std::string::npos || eins + 4 == g.size()) << n << ": " << g;
    ASSERT_TRUE(!e.empty() && e.front() != ' ' && e.back() != ' ' && e.find("  ") == std::string::npos) << n;
    if (n < 1000) {
      en_below_1000.push_back(e);
      de_below_1000.push_back(g);
      continue;
    }
    const int64_t thousands = n / 1000, rest = n % 1000;
    std::string prefix = de_below_1000[thousands];  // before "tausend" a final "eins" is "ein"
    if (prefix.ends_with("eins")) prefix.pop_back();
    ASSERT_EQ(g, prefix + "tausend" + (rest ? de_below_1000[rest] : "")) << n;
    ASSERT_EQ(e, en_below_1000[thousands] + " thousand" + (rest ? " " + en_below_1000[rest] : "")) << n;
  }
  EXPECT_EQ(en.size(), 1000000u);
  EXPECT_EQ(de.size(), 1000000u);
}

// ---- dataset ------------------------------------------------------------------------------------

std::filesystem::path temp_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tfm_number_words_" + std::to_string(::getpid()) + "_" + info->name() + "_" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<std::string> lines(const std::filesystem::path& path) {
  const std::string text = read_file(path.string());
  EXPECT_TRUE(text.empty() || text.back() == '\n') << path << " does not end with a newline";
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    out.push_back(text.substr(start, end - start));
  return out;
}

const char* const kFiles[] = {"train.en", "train.de", "valid.en", "valid.de", "test.en", "test.de"};

int digits(int64_t n) { return static_cast<int>(std::to_string(n).size()); }

TEST(NumberDataset, SplitsDisjointAlignedAndMixed) {
  const auto dir = temp_dir("a");
  const NumberDataset data = write_number_dataset(dir.string(), 7);  // the defaults
  ASSERT_EQ(data.train.size(), 20000u);
  ASSERT_EQ(data.valid.size(), 500u);
  ASSERT_EQ(data.test.size(), 1000u);

  std::set<int64_t> seen;
  const std::pair<const char*, const std::vector<int64_t>*> splits[] = {
      {"train", &data.train}, {"valid", &data.valid}, {"test", &data.test}};
  for (const auto& [name, numbers] : splits) {
    const auto en = lines(dir / (std::string(name) + ".en"));
    const auto de = lines(dir / (std::string(name) + ".de"));
    ASSERT_EQ(en.size(), numbers->size()) << name;
    ASSERT_EQ(de.size(), numbers->size()) << name;
    for (size_t i = 0; i < numbers->size(); ++i) {
      const int64_t n = (*numbers)[i];
      ASSERT_TRUE(n >= 0 && n <= kMaxNumberWord) << n;
      ASSERT_TRUE(seen.insert(n).second) << n << " is in two splits (or twice in one), found again in " << name;
      ASSERT_EQ(en[i], english_number(n)) << name << " line " << i + 1;
      ASSERT_EQ(de[i], german_number(n)) << name << " line " << i + 1;
    }
  }

  // Uniform over 1..6 digits: the 1000 numbers below 1000 run out and all get drawn; the rest
  // spread evenly over 4, 5 and 6 digits, in every split alike (the draws are shuffled).
  for (int64_t n = 0; n < 1000; ++n) EXPECT_TRUE(seen.count(n)) << n << " never drawn";
  for (const auto& [name, numbers] : splits) {
    int count[7] = {};
    for (const int64_t n : *numbers) ++count[digits(n)];
    const double size = static_cast<double>(numbers->size());
    // 1000 of the 21500 numbers (4.7%) are below 1000; without the shuffle they would all be in train.
    const double small = (count[1] + count[2] + count[3]) / size;
    EXPECT_GT(small, 0.02) << name;
    EXPECT_LT(small, 0.08) << name;
    for (int d = 4; d <= 6; ++d) {
      EXPECT_GT(count[d] / size, 0.28) << name << ", " << d << " digits";
      EXPECT_LT(count[d] / size, 0.39) << name << ", " << d << " digits";
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(NumberDataset, SameSeedSameFilesOtherSeedOtherFiles) {
  const auto a = temp_dir("a"), b = temp_dir("b"), c = temp_dir("c");
  write_number_dataset(a.string(), 42, 3000, 100, 200);
  write_number_dataset(b.string(), 42, 3000, 100, 200);
  write_number_dataset(c.string(), 43, 3000, 100, 200);
  for (const char* f : kFiles) {
    const std::string fa = read_file((a / f).string());
    EXPECT_FALSE(fa.empty()) << f;
    EXPECT_EQ(fa, read_file((b / f).string())) << f << " differs for the same seed";
    EXPECT_NE(fa, read_file((c / f).string())) << f << " is the same for seeds 42 and 43";
  }
  // Pinned: the generator is integer-only Philox, so these hold on every machine. A change here
  // changes every published demo result; change it only on purpose.
  const NumberDataset d = make_number_dataset(42, 3000, 100, 200);
  EXPECT_EQ(std::vector<int64_t>(d.train.begin(), d.train.begin() + 5),
            (std::vector<int64_t>{953, 33133, 90482, 28, 451}));
  EXPECT_EQ(std::vector<int64_t>(d.test.begin(), d.test.begin() + 5),
            (std::vector<int64_t>{91105, 557989, 8880, 9581, 25187}));
  for (const auto& dir : {a, b, c}) std::filesystem::remove_all(dir);
}

TEST(NumberDataset, EveryNumberAtOnceAndEmptySplits) {
  // All 1,000,000 numbers: every class runs out, and the draw must still end with each exactly once.
  const NumberDataset all = make_number_dataset(3, 999000, 500, 500);
  std::vector<bool> seen(kMaxNumberWord + 1, false);
  for (const auto* split : {&all.train, &all.valid, &all.test})
    for (const int64_t n : *split) {
      ASSERT_FALSE(seen[n]) << n;
      seen[n] = true;
    }
  for (int64_t n = 0; n <= kMaxNumberWord; ++n) ASSERT_TRUE(seen[n]) << n;

  const NumberDataset none = make_number_dataset(3, 0, 0, 5);
  EXPECT_TRUE(none.train.empty());
  EXPECT_TRUE(none.valid.empty());
  EXPECT_EQ(none.test.size(), 5u);
}

TEST(NumberDataset, BadSizesNameTheValues) {
  expect_error([] { make_number_dataset(1, -5, 10, 10); }, {"negative", "train -5"});
  expect_error([] { make_number_dataset(1, 999999, 1, 1); }, {"999999", "1000000"});
  expect_error([] { make_number_dataset(1, INT64_MAX, INT64_MAX, 1); }, {"1000000"});
}

}  // namespace
}  // namespace tfm
