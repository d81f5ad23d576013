// BLEU and chrF: (a) small cases worked out by hand, (b) sacreBLEU's own numbers on the committed text
// files in tests/fixtures/bleu (written by tools/make_bleu_fixtures.py; sacreBLEU is not needed here).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "testing/errors.h"
#include "eval/bleu.h"
#include "eval/chrf.h"
#include "eval/text.h"
#include "testing/fixture.h"

namespace tfm {
namespace {

using Lines = std::vector<std::string>;

BleuScore bleu1(const std::string& hyp, const Lines& refs, const BleuOptions& o = {}) {
  std::vector<std::vector<std::string>> streams;
  for (const std::string& r : refs) streams.push_back({r});
  return corpus_bleu({hyp}, streams, o);
}

double chrf1(const std::string& hyp, const Lines& refs, const ChrfOptions& o = {}) {
  std::vector<std::vector<std::string>> streams;
  for (const std::string& r : refs) streams.push_back({r});
  return corpus_chrf({hyp}, streams, o).score;
}

// exp(mean log p) of precisions given in percent, as BLEU combines them.
double geo_mean(double p1, double p2, double p3, double p4) { return std::pow(p1 * p2 * p3 * p4, 0.25); }

using testing::error_of;

// ---------------------------------------------------------------- 13a tokenizer

TEST(Bleu, Tokenize13aPunctuationNumbersEntities) {
  EXPECT_EQ(tokenize_13a("Hello, world."), "Hello , world .");
  EXPECT_EQ(tokenize_13a("It costs 3.5 or 1,200.50 dollars."), "It costs 3.5 or 1,200.50 dollars .");
  EXPECT_EQ(tokenize_13a("a-b 3-4 x-5 -5"), "a-b 3 - 4 x-5 -5");  // a dash splits only after a digit
  EXPECT_EQ(tokenize_13a("don't"), "don't");                       // the apostrophe is not split
  EXPECT_EQ(tokenize_13a("&quot;hi&quot; &amp; &lt;b&gt;"), "\" hi \" & < b >");
  EXPECT_EQ(tokenize_13a("&amp;lt;"), "<");  // unescaped in sequence: &amp; first, then &lt;
  EXPECT_EQ(tokenize_13a("a <skipped> b"), "a b");
  EXPECT_EQ(tokenize_13a("(x) [y] {z} a/b c@d e:f g;h i?j k!l m$n"),
            "( x ) [ y ] { z } a / b c @ d e : f g ; h i ? j k ! l m $ n");
  EXPECT_EQ(tokenize_13a("a.,b"), "a . , b");
  EXPECT_EQ(tokenize_13a("1.a a.1 .5 5."), "1 . a a . 1 . 5 5 .");
  EXPECT_EQ(tokenize_13a("  many   spaces\tand\u00a0nbsp  "), "many spaces and nbsp");  // Unicode whitespace
  EXPECT_EQ(tokenize_13a("Müller straße."), "Müller straße .");
}

TEST(Bleu, UnicodeLowercaseLikePython) {
  auto lower = [](const std::string& s) { return encode_utf8(unicode_lower(decode_utf8(s, "test"))); };
  EXPECT_EQ(lower("MÜLLER Straße ẞ ÀÉÎÕÜ ČŘŠŽĚŮ"), "müller straße ß àéîõü čřšžěů");
  EXPECT_EQ(lower("ΟΔΟΣ Σ ΑΣ. ΣΑ"), "οδος σ ας. σα");  // final sigma only at the end of a word
  EXPECT_EQ(lower("İ"), "i\u0307");
  EXPECT_EQ(lower("ǅ Ⅻ ДОМ"), "ǆ ⅻ дом");
}

// ---------------------------------------------------------------- BLEU by hand

TEST(Bleu, PerfectMatchIs100) {
  const BleuScore s = bleu1("The cat sat on the mat.", {"The cat sat on the mat."});
  EXPECT_DOUBLE_EQ(s.score, 100.0);
  for (double p : s.precisions) EXPECT_DOUBLE_EQ(p, 100.0);
  EXPECT_DOUBLE_EQ(s.bp, 1.0);
  EXPECT_EQ(s.stats.hyp_len, 7);  // the period is a token
  EXPECT_EQ(s.format(), "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)");
}

TEST(Bleu, ExpSmoothingForOrdersWithoutMatches) {
  // 1-grams 4/5, 2-grams 2/4, 3-grams 1/3, 4-grams 0/2 → 100 / (2 · 2).
  const BleuScore s = bleu1("the cat sat on mat", {"the cat sat in mat"});
  EXPECT_EQ(s.stats.correct[3], 0);
  EXPECT_EQ(s.stats.total[3], 2);
  EXPECT_DOUBLE_EQ(s.precisions[3], 25.0);
  EXPECT_NEAR(s.score, geo_mean(80, 50, 100.0 / 3, 25), 1e-12);

  // Two orders without matches: the first gets 1/2 of a match, the second 1/4.
  // 1-grams 3/4, 2-grams 1/3, 3-grams 0/2 → 100/(2·2), 4-grams 0/1 → 100/(4·1).
  const BleuScore t = bleu1("a b c d", {"a b x d"});
  EXPECT_DOUBLE_EQ(t.precisions[2], 25.0);
  EXPECT_DOUBLE_EQ(t.precisions[3], 25.0);
  EXPECT_NEAR(t.score, geo_mean(75, 100.0 / 3, 25, 25), 1e-12);

  // No match at all: 0, and no smoothing of the precisions.
  const BleuScore u = bleu1("x y z w", {"a b c d"});
  EXPECT_EQ(u.score, 0.0);
  EXPECT_EQ(u.precisions[3], 0.0);
}

TEST(Bleu, BrevityPenalty) {
  // 4 of 8 reference tokens, all n-grams correct: BP = exp(1 − 8/4).
  const BleuScore s = bleu1("a b c d", {"a b c d e f g h"});
  EXPECT_NEAR(s.bp, std::exp(-1.0), 1e-15);
  EXPECT_NEAR(s.score, 100 * std::exp(-1.0), 1e-12);
  EXPECT_DOUBLE_EQ(s.ratio, 0.5);
  EXPECT_EQ(s.format(), "BLEU = 36.79 100.0/100.0/100.0/100.0 (BP = 0.368 ratio = 0.500 hyp_len = 4 ref_len = 8)");

  // Longer than the reference: no penalty.
  const BleuScore l = bleu1("a b c d e", {"a b c d"});
  EXPECT_DOUBLE_EQ(l.bp, 1.0);
  EXPECT_DOUBLE_EQ(l.ratio, 1.25);

  // Three tokens have no 4-gram at all: that precision is 0 (not smoothed), so BLEU is 0.
  const BleuScore t = bleu1("a b c", {"a b c d e f"});
  EXPECT_EQ(t.stats.total[3], 0);
  EXPECT_EQ(t.score, 0.0);
  EXPECT_NEAR(t.bp, std::exp(1.0 - 2.0), 1e-15);

  // An empty hypothesis: BP 0.
  const BleuScore e = bleu1("", {"a b"});
  EXPECT_EQ(e.bp, 0.0);
  EXPECT_EQ(e.score, 0.0);
}

TEST(Bleu, MultipleReferences) {
  // Clipping uses the largest count in any one reference: "the" ×2 (second reference), "the the" ×1.
  // 1-grams 2/4, 2-grams 1/3, 3-grams 0/2 → 25, 4-grams 0/1 → 25. Closest reference length 3.
  const BleuScore s = bleu1("the the the the", {"the cat", "the the dog"});
  EXPECT_EQ(s.stats.correct[0], 2);
  EXPECT_EQ(s.stats.correct[1], 1);
  EXPECT_EQ(s.stats.ref_len, 3);
  EXPECT_NEAR(s.score, geo_mean(50, 100.0 / 3, 25, 25), 1e-12);

  // Equally close references: the shorter length wins (4 is 1 from both 3 and 5).
  EXPECT_EQ(bleu1("a b c d", {"a b c d e", "a b c"}).stats.ref_len, 3);
  EXPECT_EQ(bleu1("a b c d", {"a b", "a b c d e f"}).stats.ref_len, 2);  // closest, not shortest or first
  EXPECT_EQ(bleu1("a b c d", {"a b c d e f", "a b c d e"}).stats.ref_len, 5);

  // A second reference can only help.
  EXPECT_GT(bleu1("the cat sat on the mat", {"a cat sat on a mat", "the cat is on the mat"}).score,
            bleu1("the cat sat on the mat", {"a cat sat on a mat"}).score);
}

TEST(Bleu, CorpusSumsStatisticsNotScores) {
  // Two segments: BLEU of the corpus comes from summed counts, not from averaging segment scores.
  const BleuScore c = corpus_bleu({"a b c d", "e f g h"}, {{"a b c d", "e f x h"}});
  EXPECT_EQ(c.stats.correct[0], 7);
  EXPECT_EQ(c.stats.total[0], 8);
  EXPECT_EQ(c.stats.correct[2], 2);
  EXPECT_EQ(c.stats.correct[3], 1);
  EXPECT_EQ(c.stats.total[3], 2);
  EXPECT_NEAR(c.score, geo_mean(100.0 * 7 / 8, 100.0 * 4 / 6, 100.0 * 2 / 4, 100.0 * 1 / 2), 1e-12);
}

TEST(Bleu, LowercaseAndTokenizeNone) {
  EXPECT_LT(bleu1("The Cat Sat On The Mat", {"the cat sat on the mat"}).score, 10.0);
  BleuOptions lc;
  lc.lowercase = true;
  EXPECT_DOUBLE_EQ(bleu1("The Cat Sat On The Mat", {"the cat sat on the mat"}, lc).score, 100.0);
  EXPECT_DOUBLE_EQ(bleu1("MÜLLER STRASSE IST HIER", {"müller strasse ist hier"}, lc).score, 100.0);

  // 13a splits the punctuation off, so pre-tokenized and detokenized text match; "none" does not.
  EXPECT_DOUBLE_EQ(bleu1("Hello, world. Nice to see you.", {"Hello , world . Nice to see you ."}).score, 100.0);
  BleuOptions none;
  none.tokenize = BleuTokenize::kNone;
  const BleuScore n = bleu1("Hello, world. Nice to see you.", {"Hello , world . Nice to see you ."}, none);
  EXPECT_EQ(n.stats.hyp_len, 6);
  EXPECT_EQ(n.stats.ref_len, 9);
  EXPECT_EQ(n.stats.correct[0], 3);  // Nice, to, see ("you." is not "you")

  EXPECT_EQ(parse_bleu_tokenize("none"), BleuTokenize::kNone);
  EXPECT_NE(error_of([] { parse_bleu_tokenize("intl"); }).find("13a, none"), std::string::npos);
}

TEST(Bleu, TrailingWhitespaceAndLineBreaks) {
  // The metric rstrips before 13a, so a trailing "-\n" keeps its dash; inside a segment mteval's
  // rule joins a hyphenated line break ("self-\ncontrol" → "selfcontrol").
  const BleuScore s = bleu1("a well-\n", {"a well-"});
  EXPECT_EQ(s.stats.hyp_len, 2);
  EXPECT_EQ(s.stats.correct[0], 2);
  EXPECT_EQ(bleu1("self-\ncontrol x", {"selfcontrol x"}).stats.correct[1], 1);
  EXPECT_EQ(tokenize_13a("a\nb"), "a b");
}

TEST(Bleu, ErrorsNameTheLine) {
  const std::string bad = "bad \xff byte";
  const std::string e1 = error_of([&] { corpus_bleu({"fine", bad}, {{"a", "b"}}); });
  EXPECT_NE(e1.find("hypothesis line 2"), std::string::npos) << e1;
  EXPECT_NE(e1.find("0xff"), std::string::npos) << e1;
  const std::string e2 = error_of([&] { corpus_chrf({"fine", "ok"}, {{"a", "b"}, {"c", "\xc3"}}); });
  EXPECT_NE(e2.find("reference 2 line 2"), std::string::npos) << e2;
  EXPECT_NE(error_of([] { decode_utf8("\xc0\xaf", "x"); }).find("invalid UTF-8"), std::string::npos);      // overlong
  EXPECT_NE(error_of([] { decode_utf8("\xed\xa0\x80", "x"); }).find("invalid UTF-8"), std::string::npos);  // surrogate
  EXPECT_EQ(decode_utf8("\xf0\x9f\x98\x80", "x"), std::u32string(1, 0x1F600));

  for (const auto& [c, w] : {std::pair{1000000000, 0}, std::pair{6, 1000000000}, std::pair{-1, 2}}) {
    ChrfOptions co;
    co.char_order = c, co.word_order = w;
    const std::string e = error_of([&] { corpus_chrf({"a"}, {{"a"}}, co); });  // once bad_alloc
    EXPECT_NE(e.find("both in [0, 1000]"), std::string::npos) << e;
  }
  const std::string e3 = error_of([] { corpus_bleu({"a", "b"}, {{"a"}}); });
  EXPECT_NE(e3.find("1 lines but there are 2"), std::string::npos) << e3;

  const std::filesystem::path path = testing::temp_path("bleu_invalid.txt");
  std::ofstream(path, std::ios::binary) << "one\ntwo\nthr\xe2\x82" "ee\n";
  const std::string e4 = error_of([&] { read_text_lines(path.string()); });
  EXPECT_NE(e4.find(path.string() + " line 3"), std::string::npos) << e4;
  std::filesystem::remove(path);
}

TEST(Bleu, ReadsLinesLikePython) {
  EXPECT_EQ(split_text_lines("a\nb\n", "t"), (Lines{"a", "b"}));
  EXPECT_EQ(split_text_lines("a\n\nb", "t"), (Lines{"a", "", "b"}));
  EXPECT_EQ(split_text_lines("a\r\n", "t"), (Lines{"a\r"}));  // the metrics strip the \r as whitespace
  EXPECT_TRUE(split_text_lines("", "t").empty());
}

// ---------------------------------------------------------------- chrF by hand

TEST(BleuChrf, HandWorked) {
  EXPECT_DOUBLE_EQ(chrf1("Müller straße", {"Müller straße"}), 100.0);
  EXPECT_DOUBLE_EQ(chrf1("ab c", {"a bc"}), 100.0);  // whitespace is not part of character n-grams
  EXPECT_DOUBLE_EQ(chrf1("xyz", {"abc"}), 0.0);
  // "ab" vs "abc": order 1 P = 2/2, R = 2/3; order 2 P = 1/1, R = 1/2; order 3 has no hypothesis
  // n-grams and orders 4–6 no reference ones, so only 2 orders count: P̄ = 1, R̄ = 7/12,
  // F2 = 5·P̄·R̄ / (4·P̄ + R̄) = 35/55.
  EXPECT_NEAR(chrf1("ab", {"abc"}), 100.0 * 35 / 55, 1e-12);
  // Hypothesis n-grams of orders the reference does not have (a 3-character reference has no 4-, 5- or
  // 6-grams) are left out of the counts. Alone that changes nothing (such orders are not averaged),
  // but summed over a corpus it keeps the other segment's 4..6-gram precision at 1.
  const ChrfScore c = corpus_chrf({"abcdefg", "abcdef"}, {{"abc", "abcdef"}});
  EXPECT_EQ(c.stats.values[3 * 5], 1);  // 6-grams: only the second segment's one
  EXPECT_EQ(c.stats.values[3 * 5 + 2], 1);
  // Order n: (hyp, ref, match) = 1: (13, 9, 9), 2: (11, 7, 7), 3: (9, 5, 5), 4: (3, 3, 3), 5: (2, 2, 2), 6: (1, 1, 1).
  const double p = (9.0 / 13 + 7.0 / 11 + 5.0 / 9 + 1 + 1 + 1) / 6;
  EXPECT_NEAR(c.score, 100 * 5 * p / (4 * p + 1), 1e-12);
  // Code points, not bytes: "ü" is one character, so "ü" against "ü" is 100 and against "u" is 0.
  EXPECT_DOUBLE_EQ(chrf1("ü", {"ü"}), 100.0);
  EXPECT_DOUBLE_EQ(chrf1("ü", {"u"}), 0.0);
  // The best reference per segment.
  EXPECT_DOUBLE_EQ(chrf1("abc", {"xyz", "abc"}), 100.0);
  ChrfOptions lc;
  lc.lowercase = true;
  EXPECT_DOUBLE_EQ(chrf1("ÄBC", {"äbc"}, lc), 100.0);
  EXPECT_LT(chrf1("ÄBC", {"äbc"}), 50.0);
  EXPECT_EQ(ChrfOptions{}.name(), "chrF2");
  EXPECT_EQ(corpus_chrf({"a"}, {{"a"}}).format(), "chrF2 = 100.00");
}

// ---------------------------------------------------------------- against sacreBLEU

const std::string kDir = std::string(TFM_FIXTURE_DIR) + "/bleu/";

nlohmann::json expected() {
  std::ifstream in(kDir + "expected.json");
  EXPECT_TRUE(in) << "missing " << kDir << "expected.json (tools/make_bleu_fixtures.py writes it)";
  return nlohmann::json::parse(in);
}

// The arithmetic follows sacreBLEU's order of operations, so agreement is expected to the last bit; the
// tolerance only allows for a different libm. The printed lines must agree exactly.
constexpr double kTol = 1e-9;

void expect_bleu(const BleuScore& got, const nlohmann::json& want, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.format(), want["line"].get<std::string>());
  EXPECT_NEAR(got.score, want["score"].get<double>(), kTol);
  EXPECT_NEAR(got.bp, want["bp"].get<double>(), kTol);
  EXPECT_NEAR(got.ratio, want["ratio"].get<double>(), kTol);
  EXPECT_EQ(got.stats.hyp_len, want["sys_len"].get<int64_t>());
  EXPECT_EQ(got.stats.ref_len, want["ref_len"].get<int64_t>());
  for (int n = 0; n < BleuStats::kMaxOrder; ++n) {
    EXPECT_NEAR(got.precisions[n], want["precisions"][n].get<double>(), kTol) << "order " << n + 1;
    EXPECT_EQ(got.stats.correct[n], want["counts"][n].get<int64_t>()) << "order " << n + 1;
    EXPECT_EQ(got.stats.total[n], want["totals"][n].get<int64_t>()) << "order " << n + 1;
  }
}

void expect_chrf(const ChrfScore& got, const nlohmann::json& want, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.format(), want["line"].get<std::string>());
  EXPECT_NEAR(got.score, want["score"].get<double>(), kTol);
}

TEST(BleuVsSacrebleu, CorpusScores) {
  const nlohmann::json all = expected();
  ASSERT_GE(all["corpora"].size(), 7u);
  for (const auto& c : all["corpora"]) {
    const std::string name = c["name"];
    const Lines hyps = read_text_lines(kDir + c["hyp"].get<std::string>());
    std::vector<Lines> refs;
    for (const auto& r : c["refs"]) refs.push_back(read_text_lines(kDir + r.get<std::string>()));

    BleuOptions bo;
    bo.lowercase = c["bleu_options"]["lowercase"];
    bo.tokenize = parse_bleu_tokenize(c["bleu_options"]["tokenize"].get<std::string>());
    expect_bleu(corpus_bleu(hyps, refs, bo), c["bleu"], name);

    ChrfOptions co;
    co.lowercase = c["chrf_options"]["lowercase"];
    co.word_order = c["chrf_options"]["word_order"];
    co.eps_smoothing = c["chrf_options"]["eps_smoothing"];
    co.whitespace = c["chrf_options"]["whitespace"];
    expect_chrf(corpus_chrf(hyps, refs, co), c["chrf"], name);
  }
}

TEST(BleuVsSacrebleu, EverySegmentAlone) {
  const nlohmann::json all = expected();
  const Lines hyps = read_text_lines(kDir + "hyp.txt");
  const Lines ref1 = read_text_lines(kDir + "ref1.txt"), ref2 = read_text_lines(kDir + "ref2.txt");
  ASSERT_EQ(all["segments"].size(), hyps.size());
  for (const auto& s : all["segments"]) {
    const size_t i = s["index"];
    const std::string what = "segment " + std::to_string(i + 1) + ": " + hyps[i];
    expect_bleu(bleu1(hyps[i], {ref1[i], ref2[i]}), s["bleu"], what);
    expect_chrf(corpus_chrf({hyps[i]}, {{ref1[i]}, {ref2[i]}}), s["chrf"], what);
    // The segment-level API gives the same statistics as a one-line corpus.
    const BleuStats st = bleu_segment_stats(hyps[i], {ref1[i], ref2[i]});
    EXPECT_EQ(compute_bleu(st).format(), s["bleu"]["line"].get<std::string>()) << what;
    const ChrfStats cs = chrf_segment_stats(hyps[i], {ref1[i], ref2[i]});
    EXPECT_EQ(compute_chrf(cs).format(), s["chrf"]["line"].get<std::string>()) << what;
  }
}

TEST(BleuVsSacrebleu, Tokenizer13aAndLowercase) {
  const nlohmann::json all = expected();
  ASSERT_GT(all["tokenize"].size(), 10u);
  for (const auto& t : all["tokenize"]) {
    const std::string line = t["line"];
    EXPECT_EQ(tokenize_13a(line), t["13a"].get<std::string>()) << line;
    const std::string lower = encode_utf8(unicode_lower(decode_utf8(line, "fixture")));
    EXPECT_EQ(lower, t["lower"].get<std::string>()) << line;
    EXPECT_EQ(tokenize_13a(lower), t["13a_lower"].get<std::string>()) << line;
  }
}

}  // namespace
}  // namespace tfm
