// Random sampling and forced target prefixes, against their definitions. Sampling: the empirical
// frequencies of the first token drawn, over 20,000 draws, fit (chi-square) the distribution
// recomputed from the model's teacher-forced forward pass, tempered and restricted to the top-k and
// the nucleus as SearchOptions defines them; draws are reproducible whatever the threads, batches
// and positions, and the scores of sampled outputs are the model's log-probabilities. Prefixes:
// every hypothesis starts with its prefix, is scored as teacher forcing scores it, and greedy and
// beam search continue from the prefix as they would search with those tokens forced.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "core/threads.h"
#include "decode/search.h"
#include "decode/shortlist.h"
#include "decode/translator.h"
#include "model/transformer.h"
#include "testing/decoding.h"
#include "testing/errors.h"

namespace tfm {
namespace {

constexpr int32_t kPad = 0, kBos = 2, kEos = 3;

using testing::forced_logits;
using testing::sequence_score;

// A float64 model whose target embedding is scaled by `scale` (testing/decoding.h).
std::unique_ptr<Transformer> make_model(int64_t vocab, uint64_t seed, double scale) {
  return testing::scaled_model(vocab, seed, DType::F64, scale);
}

// ---------------------------------------------------------------------------------------------
// Sampling

// The distribution of the first output token as SearchOptions defines it, from the teacher-forced
// logits: padding and BOS banned; softmax of logits / temperature; the k most probable kept (ties:
// lower id), renormalized; then the shortest run of most probable whose probability reaches p,
// renormalized. Returns p(v) for every v.
std::vector<double> first_token_distribution(const Transformer& m, const std::vector<int32_t>& source,
                                             double temperature, int64_t k, double p) {
  const std::vector<double> z = forced_logits(m, source, {})[0];
  std::vector<int32_t> order;
  for (int32_t v = 0; v < static_cast<int32_t>(z.size()); ++v)
    if (v != kPad && v != kBos) order.push_back(v);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return z[a] != z[b] ? z[a] > z[b] : a < b; });
  if (k > 0 && k < static_cast<int64_t>(order.size())) order.resize(static_cast<size_t>(k));
  std::vector<double> q(z.size(), 0.0);
  double sum = 0;
  for (int32_t v : order) sum += q[v] = std::exp((z[v] - z[order[0]]) / temperature);
  for (int32_t v : order) q[v] /= sum;
  if (p < 1) {
    double cum = 0;
    size_t keep = 0;
    while (keep < order.size() && cum < p) cum += q[order[keep++]];
    EXPECT_GT(std::abs(cum - p), 1e-6) << "p sits on a cumulative boundary: the test would be ill-posed";
    for (size_t i = keep; i < order.size(); ++i) q[order[i]] = 0;
    for (size_t i = 0; i < keep; ++i) q[order[i]] /= cum;
  }
  return q;
}

// Pearson's chi-square of counts against probabilities (n draws), cells of expected count < 5
// pooled with the next smallest until the pool reaches 5. Adds the statistic and the degrees of
// freedom; cells of probability 0 must have no draws (else `impossible` counts them).
void chi_square(const std::vector<int64_t>& counts, const std::vector<double>& q, double& statistic, int64_t& df,
                int64_t& impossible) {
  double n = 0;
  for (int64_t c : counts) n += static_cast<double>(c);
  std::vector<std::pair<double, double>> cells;  // expected, observed
  for (size_t v = 0; v < q.size(); ++v) {
    if (q[v] == 0) {
      impossible += counts[v];
      continue;
    }
    cells.emplace_back(n * q[v], static_cast<double>(counts[v]));
  }
  std::sort(cells.begin(), cells.end());
  std::vector<std::pair<double, double>> pooled;
  std::pair<double, double> pool{0, 0};
  for (const auto& c : cells) {
    if (pool.first < 5) {
      pool.first += c.first;
      pool.second += c.second;
    } else {
      pooled.push_back(c);
    }
  }
  pooled.push_back(pool);
  for (const auto& [e, o] : pooled) statistic += (o - e) * (o - e) / e;
  df += static_cast<int64_t>(pooled.size()) - 1;
}

// The chi-square quantile at z standard deviations (Wilson–Hilferty): z = 5 is exceeded with
// probability about 3·10⁻⁷ when the counts do follow the distribution.
double chi_square_bound(int64_t df, double z = 5) {
  const double d = static_cast<double>(df), a = 2.0 / (9.0 * d);
  return d * std::pow(1 - a + z * std::sqrt(a), 3);
}

// `n` distinct sources of 1–4 tokens over the 13-token vocabulary (ids 4–12): sentence i is the
// base-9 digits of i (at most 9 + 81 + 729 + 6561 of them).
std::vector<std::vector<int32_t>> sampling_sources(int32_t n = 16) {
  std::vector<std::vector<int32_t>> out;
  for (int32_t i = 0; i < n; ++i) {
    std::vector<int32_t> s;
    int32_t rest = i;
    do {
      s.push_back(4 + rest % 9);
      rest /= 9;
    } while (rest > 0);
    s.push_back(4 + (i * 5) % 9);
    out.push_back(s);
  }
  return out;
}

// Sets the thread count for a test and puts the previous one back, also when an assertion returns early.
struct Threads {
  int before = num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(before); }
};

struct SamplingCase {
  const char* name;
  double temperature;
  int64_t k;
  double p;
  // A distribution the draws must not fit, to show the test can tell: the same with a mistake.
  double wrong_temperature;
  int64_t wrong_k;
  double wrong_p;
};

// 80 sources × 250 seeds: 20,000 first tokens per case. The statistic sums over the sources.
TEST(Sampling, FirstTokenFrequenciesFollowTheDefinedDistribution) {
  const Threads one(1);  // 1,500 small searches: quicker on one thread (threads are tested below)
  const auto m = make_model(13, 5, 1.5);
  const auto sources = sampling_sources(80);
  const SamplingCase cases[] = {
      {"whole vocabulary", 1.0, -1, 1.0, 1.3, -1, 1.0},
      {"temperature 0.5", 0.5, -1, 1.0, 1.0, -1, 1.0},
      {"temperature 2", 2.0, -1, 1.0, 1.0, -1, 1.0},
      {"top-k 4", 1.0, 4, 1.0, 1.0, -1, 1.0},
      {"top-p 0.7", 1.0, -1, 0.7, 1.0, -1, 1.0},
      {"temperature 0.8, top-k 6, top-p 0.9", 0.8, 6, 0.9, 0.8, 6, 1.0},
  };
  // The model spreads its first-token probability (else sampling would be tested on one token).
  const std::vector<double> plain = first_token_distribution(*m, sources[0], 1.0, -1, 1.0);
  EXPECT_LT(*std::max_element(plain.begin(), plain.end()), 0.6);
  constexpr int64_t kSeeds = 250;
  for (const SamplingCase& sc : cases) {
    SCOPED_TRACE(sc.name);
    SearchOptions o;
    o.beam_size = 1;
    o.sampling_topk = sc.k;
    o.sampling_topp = sc.p;
    o.sampling_temperature = sc.temperature;
    o.max_length_a = 0;
    o.max_length_b = 2;  // one drawn token, then EOS
    std::vector<std::vector<int64_t>> counts(sources.size(), std::vector<int64_t>(13, 0));
    for (int64_t seed = 0; seed < kSeeds; ++seed) {
      o.seed = static_cast<uint64_t>(seed);
      const std::vector<Hypothesis> h = greedy_search(*m, sources, o);
      for (size_t b = 0; b < sources.size(); ++b) ++counts[b][h[b].tokens.empty() ? kEos : h[b].tokens[0]];
    }
    double statistic = 0, wrong_statistic = 0;
    int64_t df = 0, wrong_df = 0, impossible = 0, wrong_impossible = 0;
    for (size_t b = 0; b < sources.size(); ++b) {
      chi_square(counts[b], first_token_distribution(*m, sources[b], sc.temperature, sc.k, sc.p), statistic, df,
                 impossible);
      chi_square(counts[b], first_token_distribution(*m, sources[b], sc.wrong_temperature, sc.wrong_k, sc.wrong_p),
                 wrong_statistic, wrong_df, wrong_impossible);
    }
    EXPECT_EQ(impossible, 0) << "tokens outside the top-k or the nucleus, or banned ones, were drawn";
    EXPECT_LT(statistic, chi_square_bound(df)) << "chi-square " << statistic << " with " << df << " degrees of freedom";
    EXPECT_GT(wrong_statistic, chi_square_bound(wrong_df))
        << "the draws fit a wrong distribution too: the test cannot tell (chi-square " << wrong_statistic << ", "
        << wrong_df << " degrees of freedom)";
  }
}

// The draw itself, on logits whose distribution is known exactly: the inverse of the cumulative
// distribution at u, over the columns in order (the whole vocabulary) or best first (restricted).
TEST(Sampling, DrawInvertsTheCumulativeDistribution) {
  const std::vector<double> z = {std::log(0.1), std::log(0.2), std::log(0.3), std::log(0.4)};
  SearchOptions o;
  o.beam_size = 1;
  o.sampling_topk = -1;
  SampleScratch scratch;
  auto draw = [&](double u, const std::vector<uint8_t>& banned = std::vector<uint8_t>(4, 0)) {
    return sample_column(z.data(), 4, banned, o, u, scratch);
  };
  EXPECT_EQ(draw(0.0), 0);
  EXPECT_EQ(draw(0.099), 0);
  EXPECT_EQ(draw(0.101), 1);
  EXPECT_EQ(draw(0.599), 2);
  EXPECT_EQ(draw(0.601), 3);
  EXPECT_EQ(draw(std::nextafter(1.0, 0.0)), 3);
  EXPECT_EQ(draw(0.5, {0, 1, 1, 1}), 0);  // only column 0 allowed
  EXPECT_EQ(draw(0.5, {1, 1, 1, 1}), -1);
  o.sampling_topk = 2;  // columns 3 (0.4 / 0.7) and 2 (0.3 / 0.7), best first
  EXPECT_EQ(draw(0.57), 3);
  EXPECT_EQ(draw(0.58), 2);
  o.sampling_topk = -1;
  o.sampling_topp = 0.65;  // 0.4 + 0.3 reaches 0.65: columns 3 and 2
  EXPECT_EQ(draw(0.58), 2);
  EXPECT_EQ(draw(0.99), 2);
  o.sampling_topp = 0.4;  // column 3 alone reaches 0.4
  EXPECT_EQ(draw(0.99), 3);
  o.sampling_topp = 1;
  o.sampling_temperature = 1e-300;  // all mass on the best
  EXPECT_EQ(draw(0.0), 3);
  EXPECT_EQ(draw(0.999), 3);
}

// Sampling draws from a stream keyed by the seed and the sentence: one thread or two, any batch
// size, batches in parallel or not, the sentence anywhere in the input, give the same outputs.
TEST(Sampling, SameSeedSameOutputsWhateverTheBatching) {
  const Threads restore(1);
  const auto m = make_model(17, 9, 2.0);
  std::vector<std::vector<int32_t>> src;
  for (int32_t i = 0; i < 30; ++i) {
    std::vector<int32_t> s;
    for (int32_t j = 0; j < 1 + (i * 7) % 6; ++j) s.push_back(4 + (i * 13 + j * 5) % 13);
    src.push_back(s);
  }
  TranslateOptions o;
  o.search.beam_size = 1;
  o.search.sampling_topk = -1;
  o.search.sampling_temperature = 1.2;
  o.search.seed = 42;
  o.batch_sentences = 30;
  o.parallel_batches = 1;
  const std::vector<Translation> reference = translate_ids(*m, src, o);
  auto expect_same = [&](const std::vector<Translation>& got, const std::vector<size_t>& index) {
    ASSERT_EQ(got.size(), index.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].hypotheses.size(), 1u);
      EXPECT_EQ(got[i].hypotheses[0].tokens, reference[index[i]].hypotheses[0].tokens) << "sentence " << index[i];
      EXPECT_NEAR(got[i].hypotheses[0].score, reference[index[i]].hypotheses[0].score, 1e-9);
    }
  };
  std::vector<size_t> identity(src.size());
  std::iota(identity.begin(), identity.end(), 0);
  struct Setting {
    int threads;
    int64_t batch, parallel;
  };
  for (const Setting& s : {Setting{1, 4, 1}, Setting{2, 30, 1}, Setting{2, 4, 2}, Setting{2, 1, 0}, Setting{2, 7, 1}}) {
    SCOPED_TRACE(::testing::Message() << s.threads << " threads, batch " << s.batch << ", parallel " << s.parallel);
    set_num_threads(s.threads);
    o.batch_sentences = s.batch;
    o.parallel_batches = s.parallel;
    expect_same(translate_ids(*m, src, o), identity);
  }
  set_num_threads(2);
  // Reversed, and with a sentence repeated at the end: each as before.
  std::vector<std::vector<int32_t>> reversed(src.rbegin(), src.rend());
  std::vector<size_t> index(identity.rbegin(), identity.rend());
  reversed.push_back(src[3]);
  index.push_back(3);
  o.batch_sentences = 7;
  expect_same(translate_ids(*m, reversed, o), index);
  // Another seed: other samples.
  o.search.seed = 43;
  const std::vector<Translation> other = translate_ids(*m, src, o);
  int64_t differ = 0;
  for (size_t i = 0; i < src.size(); ++i) differ += other[i].hypotheses[0].tokens != reference[i].hypotheses[0].tokens;
  EXPECT_GE(differ, 10) << "of 30 sentences, seeds 42 and 43 sampled the same";
}

// A sampled output's score is the model's Σ log p of its tokens, whatever the temperature and
// restrictions it was drawn with; top-k 1 is greedy search, tokens and scores.
TEST(Sampling, ScoresAreTheModelsLogProbabilitiesAndTopOneIsGreedy) {
  const auto m = make_model(13, 3, 2.0);
  const auto sources = sampling_sources();
  SearchOptions o;
  o.beam_size = 1;
  o.max_length_a = 0;
  o.max_length_b = 7;
  const std::vector<Hypothesis> greedy = greedy_search(*m, sources, o);
  struct Case {
    double temperature;
    int64_t k;
    double p;
  };
  for (const Case& sc : {Case{1.0, -1, 1.0}, Case{0.6, 5, 1.0}, Case{1.5, -1, 0.8}, Case{1.0, 3, 0.5}}) {
    SCOPED_TRACE(::testing::Message() << "temperature " << sc.temperature << ", k " << sc.k << ", p " << sc.p);
    o.sampling_topk = sc.k;
    o.sampling_temperature = sc.temperature;
    o.sampling_topp = sc.p;
    o.seed = 11;
    const std::vector<Hypothesis> sampled = greedy_search(*m, sources, o);
    for (size_t b = 0; b < sources.size(); ++b) {
      EXPECT_NEAR(sampled[b].score, sequence_score(*m, sources[b], sampled[b].tokens), 1e-9) << "sentence " << b;
      EXPECT_NEAR(sampled[b].normalized,
                  sampled[b].score / length_penalty(static_cast<int64_t>(sampled[b].tokens.size()) + 1, 0.6), 1e-12);
    }
  }
  o.sampling_topk = 1;
  o.sampling_temperature = 3;
  o.sampling_topp = 0.5;
  const std::vector<Hypothesis> top1 = greedy_search(*m, sources, o);
  for (size_t b = 0; b < sources.size(); ++b) {
    EXPECT_EQ(top1[b].tokens, greedy[b].tokens) << "sentence " << b;
    EXPECT_EQ(top1[b].score, greedy[b].score);
  }
}

// The tokens search may not produce are not drawn either: EOS before min_length, anything but EOS
// at the maximum length; with a shortlist, only its tokens.
TEST(Sampling, KeepsTheLengthLimitsAndTheShortlist) {
  const auto m = make_model(13, 3, 1.0);  // flat: EOS is likely at every step
  const auto sources = sampling_sources();
  SearchOptions o;
  o.beam_size = 1;
  o.sampling_topk = -1;
  o.sampling_temperature = 3;
  o.max_length_a = 0;
  o.max_length_b = 6;
  o.min_length = 4;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    o.seed = seed;
    for (const Hypothesis& h : greedy_search(*m, sources, o)) {
      EXPECT_GE(h.tokens.size(), 3u);
      EXPECT_LE(h.tokens.size(), 5u);
      for (int32_t v : h.tokens) EXPECT_TRUE(v != kPad && v != kBos && v != kEos) << "token " << v;
    }
  }
  const Shortlist shortlist = Shortlist::build({{4}}, {{4, 6, 9, 11}}, 13, {.per_source = 0, .frequent = 4}, "");
  o.min_length = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    o.seed = seed;
    const std::vector<Hypothesis> hyps = greedy_search(*m, sources, o, &shortlist);
    for (size_t b = 0; b < sources.size(); ++b) {
      for (int32_t v : hyps[b].tokens) EXPECT_TRUE(v == 4 || v == 6 || v == 9 || v == 11) << "token " << v;
      EXPECT_NEAR(hyps[b].score, sequence_score(*m, sources[b], hyps[b].tokens, {3, 4, 6, 9, 11}), 1e-9);
    }
  }
}

TEST(Sampling, RejectsBadOptionsNamingThem) {
  SearchOptions o;
  o.beam_size = 1;
  o.sampling_topk = -2;
  testing::expect_error([&] { o.validate(); }, {"sampling top-k", "got -2"});
  o.sampling_topk = 5;
  for (double p : {0.0, -0.5, 1.5, std::nan("")}) {
    o.sampling_topp = p;
    testing::expect_error([&] { o.validate(); }, {"top-p must be in (0, 1]"});
  }
  o.sampling_topp = 1;
  for (double t : {0.0, -1.0, HUGE_VAL, std::nan("")}) {
    o.sampling_temperature = t;
    testing::expect_error([&] { o.validate(); }, {"temperature must be finite and > 0"});
  }
  o.sampling_temperature = 1;
  o.beam_size = 4;
  o.n_best = 2;
  testing::expect_error([&] { o.validate(); }, {"sampling top-k 5", "beam size 1", "got beam size 4", "n-best 2"});
  o = SearchOptions{};
  o.sampling_topp = 0.9;
  testing::expect_error([&] { o.validate(); }, {"top-p 0.9 applies only to sampling"});
  o.sampling_topp = 1;
  o.sampling_temperature = 0.7;
  testing::expect_error([&] { o.validate(); }, {"temperature 0.7 applies only to sampling"});
}

// ---------------------------------------------------------------------------------------------
// Forced target prefixes

const std::vector<std::vector<int32_t>> kSources = {{4, 5, 6, 7}, {8, 9}, {10, 4, 11, 5, 12, 6}, {7}};
const std::vector<std::vector<int32_t>> kPrefixes = {{5, 6}, {}, {7}, {9, 9, 9}};

// Greedy search by recomputation with the prefix forced: the teacher-forced decoder over the
// prefix and the tokens so far, the most probable allowed token after the prefix (ties: lower id;
// EOS forced at max_length).
std::vector<int32_t> recompute_greedy_after(const Transformer& m, const std::vector<int32_t>& source,
                                            const std::vector<int32_t>& prefix, int64_t max_length) {
  std::vector<int32_t> tokens = prefix;
  while (static_cast<int64_t>(tokens.size()) + 1 < max_length) {
    const std::vector<double> z = forced_logits(m, source, tokens).back();
    int32_t best = -1;
    for (int32_t v = 0; v < static_cast<int32_t>(z.size()); ++v)
      if (v != kPad && v != kBos && (best < 0 || z[v] > z[best])) best = v;
    if (best == kEos) break;
    tokens.push_back(best);
  }
  return tokens;
}

bool starts_with(const std::vector<int32_t>& tokens, const std::vector<int32_t>& prefix) {
  return tokens.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), tokens.begin());
}

TEST(DecodePrefix, GreedyContinuesFromThePrefixAndScoresItByTeacherForcing) {
  const auto m = make_model(13, 3, 6.0);
  SearchOptions o;
  o.beam_size = 1;
  o.max_length_a = 0;
  o.max_length_b = 8;
  const std::vector<Hypothesis> out = greedy_search(*m, kSources, o, nullptr, kPrefixes);
  const std::vector<Hypothesis> unforced = greedy_search(*m, kSources, o);
  bool changed = false;
  for (size_t b = 0; b < kSources.size(); ++b) {
    SCOPED_TRACE(::testing::Message() << "sentence " << b);
    EXPECT_TRUE(starts_with(out[b].tokens, kPrefixes[b]));
    EXPECT_EQ(out[b].tokens, recompute_greedy_after(*m, kSources[b], kPrefixes[b], 8));
    EXPECT_NEAR(out[b].score, sequence_score(*m, kSources[b], out[b].tokens), 1e-9);
    if (kPrefixes[b].empty()) {
      EXPECT_EQ(out[b].tokens, unforced[b].tokens);
    }
    changed |= !starts_with(unforced[b].tokens, kPrefixes[b]);
  }
  EXPECT_TRUE(changed) << "greedy search produced the prefixes anyway: the test checks nothing";
}

TEST(DecodePrefix, EveryBeamSharesThePrefix) {
  const auto m = make_model(17, 7, 6.0);
  SearchOptions o;
  o.beam_size = 4;
  o.n_best = 3;
  o.record_attention = true;
  const auto out = beam_search(*m, kSources, o, nullptr, kPrefixes);
  for (size_t b = 0; b < kSources.size(); ++b) {
    SCOPED_TRACE(::testing::Message() << "sentence " << b);
    ASSERT_EQ(out[b].size(), 3u);
    for (size_t i = 0; i < out[b].size(); ++i) {
      const Hypothesis& h = out[b][i];
      EXPECT_TRUE(starts_with(h.tokens, kPrefixes[b]));
      EXPECT_NEAR(h.score, sequence_score(*m, kSources[b], h.tokens), 1e-9);
      EXPECT_NEAR(h.normalized, h.score / length_penalty(static_cast<int64_t>(h.tokens.size()) + 1, 0.6), 1e-12);
      if (i > 0) {
        EXPECT_GE(out[b][i - 1].normalized, h.normalized);
      }
      const int64_t T = static_cast<int64_t>(h.tokens.size()) + 1, S = static_cast<int64_t>(kSources[b].size()) + 1;
      EXPECT_EQ(h.attention.shape(), Shape({2, 2, T, S}));
    }
    // Each sentence as it comes out alone, whatever the prefixes of the others (the batch stays
    // one row wide while all are in their prefixes, then widens).
    const auto alone = beam_search(*m, {kSources[b]}, o, nullptr, {kPrefixes[b]})[0];
    for (size_t i = 0; i < alone.size(); ++i) {
      EXPECT_EQ(out[b][i].tokens, alone[i].tokens);
      EXPECT_NEAR(out[b][i].score, alone[i].score, 1e-9);
    }
  }
}

// On a vocabulary of 6 (pad, unk, bos, eos, 4, 5) with at most 5 output tokens, a beam of 64 keeps
// every continuation of a one- or two-token prefix: its best is the best of all sequences that
// start with the prefix under the length penalty.
TEST(DecodePrefix, WideBeamFindsTheBestContinuation) {
  const auto m = make_model(6, 11, 6.0);
  const std::vector<std::vector<int32_t>> sources = {{4, 5, 4}, {5}, {4, 4, 5, 5, 4}};
  const std::vector<std::vector<int32_t>> prefixes = {{5}, {4, 4}, {1}};
  for (double alpha : {0.0, 0.6, 1.5}) {
    SearchOptions o;
    o.beam_size = 64;
    o.length_penalty = alpha;
    o.max_length_a = 0;
    o.max_length_b = 5;
    const auto beam = beam_search(*m, sources, o, nullptr, prefixes);
    for (size_t b = 0; b < sources.size(); ++b) {
      const testing::Best best = testing::exhaustive_best(*m, sources[b], prefixes[b], 5, alpha, {1, 4, 5});
      EXPECT_EQ(beam[b][0].tokens, best.tokens) << "alpha " << alpha << " sentence " << b;
      EXPECT_NEAR(beam[b][0].normalized, best.normalized, 1e-9) << "alpha " << alpha << " sentence " << b;
    }
  }
}

// The prefix counts in the length limits: one that reaches max_length is followed by EOS; EOS
// stays banned until min_length counting the prefix.
TEST(DecodePrefix, CountsInTheLengthLimits) {
  const auto m = make_model(13, 3, 6.0);
  SearchOptions o;
  o.max_length_a = 0;
  o.max_length_b = 3;
  const std::vector<std::vector<int32_t>> sources = {{4, 5}, {6}};
  const std::vector<std::vector<int32_t>> prefixes = {{5, 6, 7, 8}, {5, 6}};  // 4 ≥ 3; 2 + EOS = 3
  for (int64_t beam : {1, 3}) {
    o.beam_size = beam;
    const auto out = beam_search(*m, sources, o, nullptr, prefixes);
    for (size_t b = 0; b < sources.size(); ++b) {
      EXPECT_EQ(out[b][0].tokens, prefixes[b]) << "beam " << beam;
      EXPECT_NEAR(out[b][0].score, sequence_score(*m, sources[b], prefixes[b]), 1e-9);
    }
  }
  o.max_length_b = 9;
  o.min_length = 7;  // 6 tokens + EOS, prefix included
  for (int64_t beam : {1, 3}) {
    o.beam_size = beam;
    for (const auto& n : beam_search(*m, sources, o, nullptr, prefixes))
      EXPECT_GE(n[0].tokens.size(), 6u) << "beam " << beam;
  }
}

// With a shortlist, the prefix's tokens join the selection: the prefix is produced and scored
// over the selection and its tokens.
TEST(DecodePrefix, WithAShortlist) {
  const auto m = make_model(13, 3, 6.0);
  const Shortlist shortlist = Shortlist::build({{4}}, {{4, 6, 9, 11}}, 13, {.per_source = 0, .frequent = 4}, "");
  const std::vector<std::vector<int32_t>> prefixes = {{5}, {}, {5, 7}, {}};
  const std::vector<int32_t> allowed = {3, 4, 5, 6, 7, 9, 11};
  SearchOptions o;
  for (int64_t beam : {1, 4}) {
    o.beam_size = beam;
    const auto out = beam_search(*m, kSources, o, &shortlist, prefixes);
    for (size_t b = 0; b < kSources.size(); ++b) {
      EXPECT_TRUE(starts_with(out[b][0].tokens, prefixes[b]));
      EXPECT_NEAR(out[b][0].score, sequence_score(*m, kSources[b], out[b][0].tokens, allowed), 1e-9);
    }
  }
}

TEST(DecodePrefix, SamplingContinuesFromThePrefix) {
  const auto m = make_model(13, 3, 2.0);
  SearchOptions o;
  o.beam_size = 1;
  o.sampling_topk = -1;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    o.seed = seed;
    const auto out = greedy_search(*m, kSources, o, nullptr, kPrefixes);
    for (size_t b = 0; b < kSources.size(); ++b) {
      EXPECT_TRUE(starts_with(out[b].tokens, kPrefixes[b]));
      EXPECT_NEAR(out[b].score, sequence_score(*m, kSources[b], out[b].tokens), 1e-9);
    }
  }
  // The prefix is part of what keys the draws: the same sentence with another prefix draws anew,
  // and the stream of a sentence does not depend on the seed alone.
  EXPECT_NE(sampling_stream(1, {4, 5}, {}).stream, sampling_stream(1, {4, 5}, {6}).stream);
  EXPECT_NE(sampling_stream(1, {4, 5}, {}).stream, sampling_stream(1, {4}, {5}).stream);
}

TEST(DecodePrefix, BadPrefixesAreRefused) {
  const auto m = make_model(13, 3, 6.0);
  SearchOptions o;
  testing::expect_error([&] { beam_search(*m, kSources, o, nullptr, {{5}}); }, {"4 sources but 1 target prefixes"});
  testing::expect_error([&] { greedy_search(*m, {{4}}, o, nullptr, {{5, kEos}}); }, {"target prefix token id 3"});
  testing::expect_error([&] { greedy_search(*m, {{4}}, o, nullptr, {{13}}); }, {"target prefix token id 13"});
  testing::expect_error([&] { greedy_search(*m, {{4}}, o, nullptr, {{kBos}}); }, {"target prefix token id 2"});
  TranslateOptions t;
  t.max_input_tokens = 3;
  testing::expect_error([&] { translate_ids(*m, {{4}, {5}}, t, nullptr, {{}, {5, 6, 7, 8}}); },
                        {"sentence 1", "target prefix has 4 tokens", "limit of 3"});
  testing::expect_error([&] { translate_ids(*m, {{4}, {5}}, t, nullptr, {{}}); }, {"2 sentences but 1 target prefixes"});
  // An empty input has no translation, whatever its prefix.
  const auto out = translate_ids(*m, {{}, {4}}, t, nullptr, {{5}, {5}});
  EXPECT_TRUE(out[0].hypotheses.empty());
  EXPECT_TRUE(out[0].prefix_ids.empty());
  EXPECT_EQ(out[1].prefix_ids, std::vector<int32_t>{5});
  EXPECT_TRUE(starts_with(out[1].hypotheses[0].tokens, {5}));
}

}  // namespace
}  // namespace tfm
