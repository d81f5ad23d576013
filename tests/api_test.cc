// The public C++ API (include/transformer): a Translator on the committed tiny model gives the
// committed translations; its scores by teacher forcing agree with the search's own; attention,
// n-best, the input policy, id checks, model files and metrics behave as documented.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "model/checkpoint.h"
#include "testing/errors.h"
#include "testing/fixture.h"
#include "transformer/attention_svg.h"
#include "transformer/metrics.h"
#include "transformer/model.h"
#include "transformer/shortlist.h"
#include "transformer/text.h"
#include "transformer/trainer.h"
#include "transformer/translator.h"

namespace {

using namespace transformer;

const std::string kDir = std::string(TFM_FIXTURE_DIR) + "/tiny_model";
const std::string kModel = kDir + "/model.safetensors";

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Api, TranslatesAsTheCommittedOutputs) {
  const Translator t(kModel);
  const std::vector<std::string> input = lines_of(kDir + "/input.en");
  ASSERT_EQ(input.size(), 10u);
  for (const auto& [beam, file] : {std::pair<int64_t, const char*>{1, "expected.greedy.de"}, {4, "expected.beam4.de"}}) {
    SCOPED_TRACE(file);
    TranslateOptions o;
    o.search.beam_size = beam;
    const std::vector<Translation> out = t.translate(input, o);
    const std::vector<std::string> expected = lines_of(kDir + "/" + file);
    ASSERT_EQ(out.size(), expected.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const std::string got = out[i].hypotheses.empty() ? "" : out[i].best().text;
      EXPECT_EQ(got, expected[i]) << "line " << i + 1;
      EXPECT_EQ(out[i].hypotheses.empty(), input[i].empty());
    }
  }
}

// The search's score of a hypothesis (incremental decoding, Σ log p) is what teacher forcing gives
// the same pair: two different code paths through the model.
TEST(Api, ScoresAgreeWithTheSearch) {
  const Translator t(kModel, {.weights = TranslatorOptions::Weights::kPlain});
  TranslateOptions o;
  o.search.beam_size = 4;
  o.search.n_best = 3;
  const std::vector<Translation> out = t.translate({"three hundred forty-two", "seventy-one", "one"}, o);
  std::vector<std::vector<int32_t>> src, tgt;
  std::vector<double> expected;
  for (const Translation& r : out) {
    ASSERT_EQ(r.hypotheses.size(), 3u);
    for (size_t h = 1; h < r.hypotheses.size(); ++h)
      EXPECT_GE(r.hypotheses[h - 1].normalized, r.hypotheses[h].normalized) << "n-best not sorted";
    for (const Hypothesis& h : r.hypotheses) {
      src.push_back(r.source_ids);
      tgt.push_back(h.ids);
      expected.push_back(h.score);
    }
  }
  const std::vector<Score> scores = t.score_ids(src, tgt);
  ASSERT_EQ(scores.size(), expected.size());
  for (size_t i = 0; i < scores.size(); ++i) {
    EXPECT_NEAR(scores[i].total, expected[i], 1e-4) << "pair " << i;
    EXPECT_EQ(scores[i].tokens, static_cast<int64_t>(tgt[i].size()) + 1);
    EXPECT_NEAR(scores[i].per_token, scores[i].total / static_cast<double>(scores[i].tokens), 1e-12);
  }
  // The text form encodes both sides first: the same numbers for the same ids.
  const std::vector<Score> text = t.score({"three hundred forty-two"}, {out[0].best().text});
  EXPECT_EQ(t.encode(out[0].best().text), out[0].best().ids);
  EXPECT_NEAR(text[0].total, out[0].best().score, 1e-4);
  // encode cleans as translate does: the ids it gives are the source ids translate uses.
  for (const std::string& line : {std::string("three\0hundred", 13), std::string("  three\xffhundred "),
                                 std::string("\xff\xfe")}) {
    const std::vector<Translation> r = t.translate({line});
    EXPECT_EQ(t.encode(line), r[0].source_ids) << "line of " << line.size() << " bytes";
  }
  EXPECT_EQ(t.encode(std::string("three\0hundred", 13)), t.encode("three hundred"));
}

// A pair's score has the same bits whatever it is scored with: alone, in one batch with longer and
// shorter pairs, in another order, at other batch sizes (each pair is scored on its own rows).
TEST(Api, AScoreDoesNotDependOnTheBatch) {
  const Translator t(kModel, {.weights = TranslatorOptions::Weights::kPlain});
  std::vector<std::string> input;
  for (const std::string& line : lines_of(kDir + "/input.en"))
    if (!line.empty()) input.push_back(line);
  input.push_back("nine hundred ninety-nine thousand nine hundred ninety-nine");  // longer than the rest
  std::vector<std::vector<int32_t>> src, tgt;
  for (const Translation& r : t.translate(input)) {
    src.push_back(r.source_ids);
    tgt.push_back(r.best().ids);
  }
  std::vector<double> alone;
  for (size_t i = 0; i < src.size(); ++i) alone.push_back(t.score_ids({src[i]}, {tgt[i]})[0].total);
  for (const int64_t size : {int64_t{64}, int64_t{2}, int64_t{3}}) {
    ScoreOptions o;
    o.batch_sentences = size;
    const std::vector<Score> together = t.score_ids(src, tgt, o);
    for (size_t i = 0; i < src.size(); ++i) EXPECT_EQ(together[i].total, alone[i]) << "pair " << i << ", batch " << size;
  }
  std::vector<std::vector<int32_t>> rsrc(src.rbegin(), src.rend()), rtgt(tgt.rbegin(), tgt.rend());
  const std::vector<Score> reversed = t.score_ids(rsrc, rtgt);
  for (size_t i = 0; i < src.size(); ++i) EXPECT_EQ(reversed[src.size() - 1 - i].total, alone[i]) << "pair " << i;
}

// Weights::kBf16: the plain weights with bfloat16 products (inputs rounded, float32 sums), in the
// search and in scoring alike: the search's scores are the scorer's for the same pairs, and they
// differ from float32's by the rounding (not at all would mean the products were not rounded;
// much more, that something else changed).
TEST(Api, Bf16ProductsTranslateAndScoreAlike) {
  const Translator bf16(kModel, {.weights = TranslatorOptions::Weights::kBf16}),
      f32(kModel, {.weights = TranslatorOptions::Weights::kPlain});
  TranslateOptions o;
  o.search.beam_size = 4;
  o.search.n_best = 2;
  const std::vector<std::string> lines = {"three hundred forty-two", "seventy-one", "one", "nine thousand and six"};
  const std::vector<Translation> out = bf16.translate(lines, o);
  std::vector<std::vector<int32_t>> src, tgt;
  std::vector<double> expected;
  for (const Translation& r : out)
    for (const Hypothesis& h : r.hypotheses) {
      src.push_back(r.source_ids);
      tgt.push_back(h.ids);
      expected.push_back(h.score);
    }
  ASSERT_EQ(expected.size(), 2 * lines.size());
  const std::vector<Score> in_bf16 = bf16.score_ids(src, tgt), in_f32 = f32.score_ids(src, tgt);
  double largest = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(in_bf16[i].total, expected[i], 1e-4) << "pair " << i;
    const double d = std::abs(in_bf16[i].total - in_f32[i].total);
    EXPECT_LT(d, 0.02 * static_cast<double>(in_f32[i].tokens)) << "pair " << i << ": bf16 " << in_bf16[i].total
                                                                << ", float32 " << in_f32[i].total;
    largest = std::max(largest, d);
  }
  EXPECT_GT(largest, 1e-6) << "bf16 scores equal float32's: the products were not rounded";
  EXPECT_EQ(out[0].best().text, f32.translate({lines[0]}, o)[0].best().text);
}

TEST(Api, AttentionIsAProbabilityOverTheSource) {
  const Translator t(kModel);
  TranslateOptions o;
  o.search.record_attention = true;
  const Translation r = t.translate({"three hundred forty-two"}, o)[0];
  const Attention& a = r.best().attention;
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.target_length, static_cast<int64_t>(r.best().ids.size()) + 1);
  EXPECT_EQ(a.source_length, static_cast<int64_t>(r.source_ids.size()) + 1);
  EXPECT_EQ(a.weights.size(), static_cast<size_t>(a.layers * a.heads * a.target_length * a.source_length));
  for (int64_t l = 0; l < a.layers; ++l)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t i = 0; i < a.target_length; ++i) {
        double sum = 0;
        for (int64_t s = 0; s < a.source_length; ++s) sum += a.at(l, h, i, s);
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
  // Its picture: one heatmap labelled with the pieces, a grid of every head, and errors naming
  // a layer or head the model lacks.
  const std::string svg = attention_svg(t, r, r.best());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("average of " + std::to_string(a.heads) + " heads"), std::string::npos);
  EXPECT_NE(svg.find(t.piece(r.source_ids[0])), std::string::npos);
  const std::string grid = attention_svg(t, r, r.best(), {.grid = true});
  EXPECT_NE(grid.find("head " + std::to_string(a.heads - 1)), std::string::npos);
  const std::string bad_layer = "layer " + std::to_string(a.layers) + " is outside";
  tfm::testing::expect_error([&] { attention_svg(t, r, r.best(), {.layer = a.layers}); }, {bad_layer.c_str()});
  tfm::testing::expect_error([&] { attention_svg(t, r, r.best(), {.head = a.heads}); }, {"head", "outside"});
  o.search.record_attention = false;
  const Translation plain = t.translate({"one"}, o)[0];
  EXPECT_TRUE(plain.best().attention.empty());
  tfm::testing::expect_error([&] { attention_svg(t, plain, plain.best()); }, {"no attention"});
}

TEST(Api, InputPolicyRepairsAndReports) {
  const CleanText nul = clean_input(std::string("  three\0hundred \n", 17));
  EXPECT_EQ(nul.text, "three hundred");
  EXPECT_TRUE(nul.repairs.nul_bytes);
  EXPECT_FALSE(nul.repairs.invalid_utf8);
  const CleanText bad = clean_input("drei\xffhundert");
  EXPECT_EQ(bad.text, "drei\xEF\xBF\xBDhundert");
  EXPECT_TRUE(bad.repairs.invalid_utf8);
  EXPECT_FALSE(clean_input("vier").repairs.any());
  EXPECT_EQ(repair_warnings(bad.repairs, "line 7"),
            std::vector<std::string>{"line 7 is not valid UTF-8; invalid bytes replaced by U+FFFD"});
  // translate and score apply it and say so.
  const Translator t(kModel);
  TranslateOptions o;
  o.search.beam_size = 1;
  const auto out = t.translate({std::string("three\0hundred", 13), "three hundred"}, o);
  EXPECT_TRUE(out[0].repairs.nul_bytes);
  EXPECT_FALSE(out[1].repairs.any());
  EXPECT_EQ(out[0].best().text, out[1].best().text);
  const Translator plain(kModel, {.weights = TranslatorOptions::Weights::kPlain});
  const auto s = plain.score({"three hundred"}, {"drei\xffhundert"});
  tfm::testing::expect_error([&] { t.score({"three hundred"}, {"drei"}); }, {"weights = plain", "packed"});
  EXPECT_TRUE(s[0].target_repairs.invalid_utf8);
  EXPECT_FALSE(s[0].source_repairs.any());
}

TEST(Api, BadIdsAndOptionsAreErrorsNamingTheValue) {
  const Translator t(kModel, {.need_vocab = false});
  EXPECT_FALSE(t.has_vocab());
  tfm::testing::expect_error([&] { t.translate({"one"}); }, {"without a vocabulary"});
  tfm::testing::expect_error([&] { t.translate_ids({{5, 6}, {5, 100000}}); }, {"sentence 1", "100000", "outside"});
  tfm::testing::expect_error([&] { t.translate_ids({{0}}); }, {"padding"});
  EXPECT_EQ(t.parse_ids(" 5  6\t7 ", 3), (std::vector<int32_t>{5, 6, 7}));
  tfm::testing::expect_error([&] { t.parse_ids("5 x", 3); }, {"line 3", "'x' is not a token id"});
  tfm::testing::expect_error([&] { t.parse_ids("99999999999999999999", 4); }, {"line 4", "99999999999999999999"});
  TranslateOptions o;
  o.search.beam_size = 0;
  tfm::testing::expect_error([&] { t.translate_ids({{5}}, o); }, {"beam size", "got 0"});
  tfm::testing::expect_error([&] { t.score_ids({{5}}, {}); }, {"1 sources but 0 targets"});
  tfm::testing::expect_error([&] { Translator("/nonexistent/model.safetensors"); }, {"/nonexistent/model.safetensors"});
  tfm::testing::expect_error([&] { Translator(kModel, {.vocab = "/nonexistent.model"}); }, {"/nonexistent.model"});
  // libgomp crashed starting 100,000 threads (Translator(threads=100000) took Python down).
  tfm::testing::expect_error([&] { Translator(kModel, {.threads = 100000}); }, {"threads", "[0, 1024]", "100000"});
}

// Each translator's calls run on its own thread count; the results do not depend on it, and two
// threads may translate with one translator at once.
TEST(Api, ThreadsPerTranslatorAndConcurrentCalls) {
  const std::vector<std::string> input = lines_of(kDir + "/input.en");
  const Translator one(kModel, {.threads = 1}), two(kModel, {.threads = 2});
  const auto a = one.translate(input), b = two.translate(input);
  std::vector<Translation> c, d;
  std::thread x([&] { c = two.translate(input); }), y([&] { d = two.translate(input); });
  x.join();
  y.join();
  for (size_t i = 0; i < input.size(); ++i) {
    if (a[i].hypotheses.empty()) continue;
    EXPECT_EQ(a[i].best().ids, b[i].best().ids);
    EXPECT_EQ(c[i].best().ids, b[i].best().ids);
    EXPECT_EQ(d[i].best().ids, b[i].best().ids);
  }
}

// Random sampling through the API: the same seed gives the same translations with one thread or
// two, one batch or several in parallel; another seed others; top-k 1 is greedy search; the scores
// are the model's log-probabilities, as scoring computes them.
TEST(Api, SamplingIsSeededAndReproducible) {
  const std::vector<std::string> input = lines_of(kDir + "/input.en");
  const Translator one(kModel, {.threads = 1}), two(kModel, {.threads = 2});
  TranslateOptions o;
  o.search.beam_size = 1;
  o.search.sampling_topk = -1;
  o.search.seed = 5;
  const std::vector<Translation> a = one.translate(input, o);
  o.batch_sentences = 3;
  o.parallel_batches = 2;
  const std::vector<Translation> b = two.translate(input, o);
  o.search.seed = 6;
  const std::vector<Translation> c = two.translate(input, o);
  int64_t differ = 0;
  for (size_t i = 0; i < input.size(); ++i) {
    if (input[i].empty()) continue;
    EXPECT_EQ(a[i].best().ids, b[i].best().ids) << "line " << i + 1;
    EXPECT_EQ(a[i].best().text, b[i].best().text);
    differ += a[i].best().ids != c[i].best().ids;
  }
  EXPECT_GE(differ, 3) << "seeds 5 and 6 sampled alike";
  const Translator plain(kModel, {.weights = TranslatorOptions::Weights::kPlain});
  std::vector<std::vector<int32_t>> src, tgt;
  std::vector<double> sampled;
  for (size_t i = 0; i < input.size(); ++i) {
    if (input[i].empty()) continue;
    src.push_back(a[i].source_ids);
    tgt.push_back(a[i].best().ids);
    sampled.push_back(a[i].best().score);
  }
  const std::vector<Score> scores = plain.score_ids(src, tgt);
  for (size_t j = 0; j < scores.size(); ++j) EXPECT_NEAR(scores[j].total, sampled[j], 1e-4) << "pair " << j;
  o.search.sampling_topk = 1;
  const std::vector<Translation> greedy = one.translate(input, o);
  const std::vector<std::string> expected = lines_of(kDir + "/expected.greedy.de");
  for (size_t i = 0; i < input.size(); ++i)
    EXPECT_EQ(greedy[i].hypotheses.empty() ? "" : greedy[i].best().text, expected[i]) << "line " << i + 1;
  o.search.sampling_topk = 5;
  o.search.beam_size = 4;
  tfm::testing::expect_error([&] { one.translate(input, o); }, {"sampling top-k 5", "got beam size 4"});
}

// A forced target prefix: every hypothesis's ids begin with the encoded prefix (its text with the
// prefix's), the score counts it as scoring does, "" means none, and bad prefixes are refused.
TEST(Api, TargetPrefixStartsEveryHypothesis) {
  const Translator t(kModel), plain(kModel, {.weights = TranslatorOptions::Weights::kPlain});
  TranslateOptions o;
  o.search.n_best = 2;
  const std::vector<Translation> out =
      t.translate({"three hundred forty-two", "seventy-one", ""}, o, {"dreihundert", "", "eins"});
  const std::vector<int32_t> prefix = t.encode("dreihundert");
  ASSERT_FALSE(prefix.empty());
  EXPECT_EQ(out[0].target_prefix_ids, prefix);
  ASSERT_EQ(out[0].hypotheses.size(), 2u);
  for (const Hypothesis& h : out[0].hypotheses) {
    ASSERT_GE(h.ids.size(), prefix.size());
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), h.ids.begin()));
    EXPECT_EQ(h.text.rfind("dreihundert", 0), 0u) << h.text;
    EXPECT_NEAR(plain.score_ids({out[0].source_ids}, {h.ids})[0].total, h.score, 1e-4);
  }
  EXPECT_TRUE(out[1].target_prefix_ids.empty());
  EXPECT_EQ(out[1].best().ids, t.translate({"seventy-one"}, o)[0].best().ids);
  EXPECT_TRUE(out[2].hypotheses.empty());
  // Greedy and sampling continue from it too; ids in, ids out.
  o.search.beam_size = 1;
  o.search.n_best = 1;
  const Translator ids(kModel, {.need_vocab = false});
  for (int64_t k : {0, -1}) {
    o.search.sampling_topk = k;
    const Translation r = ids.translate_ids({out[0].source_ids}, o, {prefix})[0];
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), r.best().ids.begin())) << "top-k " << k;
  }
  EXPECT_TRUE(t.translate({"three hundred"}, o, {std::string("drei\0hundert", 12)})[0].prefix_repairs.nul_bytes);
  tfm::testing::expect_error([&] { t.translate({"one", "two"}, o, {"eins"}); }, {"2 sentences but 1 target prefixes"});
  tfm::testing::expect_error([&] { ids.translate_ids({{5}}, o, {{5, 0}}); },
                             {"sentence 0: target prefix: token id 0 is the padding id"});
  tfm::testing::expect_error([&] { ids.translate_ids({{5}}, o, {{100000}}); },
                             {"sentence 0: target prefix: token id 100000 is outside the vocabulary"});
}

TEST(Api, ModelInfoAndAveraging) {
  const ModelInfo info = model_info(kModel);
  EXPECT_GT(info.total_parameters, 0);
  EXPECT_EQ(info.total_parameters, info.embedding_parameters + info.encoder_parameters + info.decoder_parameters);
  EXPECT_TRUE(info.tied_output);
  // An output projection of its own, with a logits bias, counts with the embeddings, not the decoder.
  for (const bool tie_output : {true, false}) {
    ModelConfig c = model_preset("tiny");
    c.vocab_size = 50;
    c.tie_output = tie_output;
    c.output_bias = !tie_output;
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("api_test_info-" + std::to_string(::getpid()) + (tie_output ? "-tied" : "-untied") +
                               ".safetensors")).string();
    init_model(c, 1, path);
    const ModelInfo i = model_info(path);
    EXPECT_EQ(i.tied_output, tie_output);
    const int64_t embeddings = c.vocab_size * c.d_model * (c.tie_source_target ? 1 : 2);
    EXPECT_EQ(i.embedding_parameters, embeddings + (tie_output ? 0 : c.vocab_size * c.d_model + c.vocab_size));
    EXPECT_EQ(i.total_parameters, i.embedding_parameters + i.encoder_parameters + i.decoder_parameters);
    std::filesystem::remove(path);
  }
  EXPECT_EQ(info.file_bytes, static_cast<int64_t>(std::filesystem::file_size(kModel)));
  ASSERT_FALSE(info.config.empty());
  EXPECT_EQ(info.config[0].first, "vocab_size");
  // The fixture predates checksums: loading it says so.
  EXPECT_TRUE(info.checksum.empty());
  ASSERT_EQ(info.notes.notes.size(), 1u);
  EXPECT_NE(info.notes.notes[0].find("records no checksum"), std::string::npos);
  // The average of a model with itself is the model; it is written with a checksum.
  const std::string out = (std::filesystem::temp_directory_path() / ("api_test_average-" + std::to_string(::getpid()) + ".safetensors")).string();
  average_checkpoints({kModel, kModel}, out);
  const ModelInfo avg = model_info(out);
  EXPECT_FALSE(avg.checksum.empty());
  EXPECT_TRUE(avg.checksum_verified);
  EXPECT_EQ(avg.metadata.at("averaged_from"), "2 checkpoints");
  const Translator a(kModel), b(out, {.vocab = kDir + "/vocab.model"});
  EXPECT_EQ(a.translate({"seventy-one"})[0].best().ids, b.translate({"seventy-one"})[0].best().ids);
  std::filesystem::remove(out);
  tfm::testing::expect_error([&] { average_checkpoints({}, out); }, {"at least one"});
}

// A model that records no vocabulary fingerprint (the fixture: an older version's) averaged with
// one that records one is refused, in either order, naming both files: the output would claim a
// vocabulary that half its weights may not know.
TEST(Api, AverageRefusesAMissingVocabularyFingerprint) {
  const tfm::SafetensorsFile f = tfm::SafetensorsFile::read(kModel);
  std::vector<tfm::NamedTensor> tensors;
  for (const std::string& n : f.names()) tensors.push_back({n, f.tensor(n)});
  std::map<std::string, std::string> meta = f.metadata();
  meta[tfm::kVocabFingerprintKey] = "0123456789abcdef";
  const std::string with = tfm::testing::temp_path("with-fingerprint.safetensors"),
                    out = tfm::testing::temp_path("average-fingerprint.safetensors");
  tfm::write_safetensors(with, meta, tensors);
  std::filesystem::remove(out);
  for (const auto& [first, second] : {std::pair{kModel, with}, {with, kModel}})
    tfm::testing::expect_error([&] { average_checkpoints({first, second}, out); },
                               {"cannot average '", second.c_str(), first.c_str(),
                                "records the vocabulary fingerprint 0123456789abcdef and '", "' none"});
  EXPECT_FALSE(std::filesystem::exists(out));
  average_checkpoints({with, with}, out);
  EXPECT_EQ(model_info(out).vocab_fingerprint, "0123456789abcdef");
}

// A shortlist built from the test sentences and their translations, then used by a translator:
// the translations stay within its tokens, and a bad option is refused before anything is read.
TEST(Api, ShortlistBuiltAndUsed) {
  const auto dir = std::filesystem::temp_directory_path();
  // One file per process: ctest runs this test at several levels at once.
  const std::string list = (dir / ("api_test-" + std::to_string(::getpid()) + ".shortlist")).string();
  const ShortlistSummary s = build_shortlist(kDir + "/input.en", kDir + "/expected.greedy.de", kDir + "/vocab.model",
                                             list, {.per_source = 5, .frequent = 10});
  EXPECT_EQ(s.frequent, 10);
  EXPECT_NE(s.corpus.find("9 kept"), std::string::npos) << s.corpus;  // the empty line is skipped
  // Its tokens all come from the target side it was built from.
  std::set<int32_t> seen;
  const Translator plain(kModel), listed(kModel, {.shortlist = list});
  for (const std::string& line : lines_of(kDir + "/expected.greedy.de"))
    for (int32_t id : plain.encode(line)) seen.insert(id);
  TranslateOptions o;
  o.search.beam_size = 1;
  const std::vector<std::string> input = lines_of(kDir + "/input.en");
  for (const Translation& t : listed.translate(input, o))
    for (const Hypothesis& h : t.hypotheses)
      for (int32_t id : h.ids) EXPECT_TRUE(seen.count(id)) << "token " << id << " is not in the shortlist's data";
  // A shortlist of every token seen changes nothing.
  build_shortlist(kDir + "/input.en", kDir + "/expected.greedy.de", kDir + "/vocab.model", list,
                  {.per_source = 100000, .frequent = 100000});
  const Translator whole(kModel, {.shortlist = list});
  const auto a = plain.translate(input, o), b = whole.translate(input, o);
  for (size_t i = 0; i < input.size(); ++i) {
    if (a[i].hypotheses.empty()) continue;
    EXPECT_EQ(a[i].best().ids, b[i].best().ids) << "line " << i + 1;
  }
  std::filesystem::remove(list);
  tfm::testing::expect_error([&] { build_shortlist("/nonexistent", "/nonexistent", "/nonexistent", list, {0, 0}); },
                             {"got 0 and 0"});
}

TEST(Api, InitModelAndPlotErrors) {
  const std::string out = (std::filesystem::temp_directory_path() / ("api_test_init-" + std::to_string(::getpid()) + ".safetensors")).string();
  ModelConfig c = model_preset("tiny");
  c.vocab_size = 40;
  const int64_t n = init_model(c, 3, out);
  EXPECT_EQ(n, parameter_count(c));
  EXPECT_EQ(model_info(out).total_parameters, n);
  const Translator t(out, {.need_vocab = false});
  EXPECT_EQ(t.vocab_size(), 40);
  std::filesystem::remove(out);
  c.heads = 0;
  tfm::testing::expect_error([&] { init_model(c, 3, out); }, {"heads"});
  EXPECT_FALSE(std::filesystem::exists(out));
  tfm::testing::expect_error([&] { plot_training("/nonexistent-run"); }, {"/nonexistent-run/metrics.jsonl"});
  // A log with nothing to draw says which way it has nothing, and no picture is written.
  const std::string run = (std::filesystem::temp_directory_path() / ("api_test_plot-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(run);
  const std::string log = run + "/metrics.jsonl", svg = run + "/training.svg";
  std::ofstream(log) << "";
  tfm::testing::expect_error([&] { plot_training(run); }, {"holds no records yet"});
  std::ofstream(log) << "garbage\n{\"loss\": NaN}\n";
  tfm::testing::expect_error([&] { plot_training(run); }, {"has 2 lines and none is a metrics record"});
  std::ofstream(log) << "{\"step\": 1}\n";
  tfm::testing::expect_error([&] { plot_training(run); }, {"holds 1 records but no loss or validation values"});
  EXPECT_FALSE(std::filesystem::exists(svg));
  std::ofstream(log) << "{\"step\": 1, \"loss\": 2.5}\n";
  EXPECT_EQ(plot_training(run), svg);
  EXPECT_TRUE(std::filesystem::exists(svg));
  // Values never negative get no negative tick (a BLEU near 0 once drew -0.08428).
  // (A BLEU of 0 at every validation, a flat series, drew -1.1 and -0.55.)
  for (const char* records : {"{\"step\": 1, \"loss\": 2.5}\n{\"step\": 2, \"loss\": 0.01}\n",
                              "{\"step\": 1, \"loss\": 0}\n{\"step\": 2, \"loss\": 0}\n"}) {
    std::ofstream(log) << records;
    plot_training(run);
    std::stringstream drawn;
    drawn << std::ifstream(svg).rdbuf();
    EXPECT_EQ(drawn.str().find(">-"), std::string::npos) << records << drawn.str();
  }
  std::filesystem::remove_all(run);
}

TEST(Api, Metrics) {
  const ExactMatch m = exact_match({"a", "B", "c"}, {{"a", "b", "x"}, {"y", "y", "c"}});
  EXPECT_EQ(m.matches, 2);
  EXPECT_EQ(m.segments, 3);
  EXPECT_NEAR(m.score, 200.0 / 3, 1e-12);
  EXPECT_EQ(exact_match({"a", "B", "c"}, {{"a", "b", "x"}}, true).matches, 2);
  // A CRLF file's lines against an LF file's: the carriage return is not part of the segment.
  EXPECT_EQ(exact_match({"a\r", "b\r", "c \r"}, {{"a", "b\r", "c"}}).matches, 2);
  EXPECT_EQ(exact_match({"A\r"}, {{"a"}}, true).matches, 1);
  tfm::testing::expect_error([&] { exact_match({"a"}, {{"a", "b"}}); }, {"1 hypotheses", "2 segments"});
  const BleuScore b = corpus_bleu({"the cat sat on the mat"}, {{"the cat sat on the mat"}});
  EXPECT_NEAR(b.score, 100.0, 1e-9);
  const ChrfScore c = corpus_chrf({"the cat"}, {{"the dog"}});
  EXPECT_GT(c.score, 0.0);
  EXPECT_LT(c.score, 100.0);
}

}  // namespace
