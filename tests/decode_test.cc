// Decoding: the cached incremental decoder gives the same tokens and scores as recomputing the
// whole decoder at each step; beam size 1 is greedy search; a wide beam finds the best sequence
// under the length penalty (checked by exhaustive search on a tiny vocabulary); sentences decoded
// together get what they get alone.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "decode/search.h"
#include "decode/shortlist.h"
#include "model/transformer.h"
#include "testing/decoding.h"
#include "testing/errors.h"

namespace tfm {
namespace {

using testing::sequence_score;
using testing::tiny_decoding_config;

// A model whose output distributions are far from uniform, so that search decisions matter.
std::unique_ptr<Transformer> make_model(int64_t vocab, uint64_t seed, DType dtype = DType::F32, bool pre_norm = false) {
  return testing::scaled_model(vocab, seed, dtype, 6.0, pre_norm);
}

const std::vector<std::vector<int32_t>> kSources = {{4, 5, 6, 7}, {8, 9}, {10, 4, 11, 5, 12, 6}, {7}};

// Greedy search by recomputing: the full teacher-forced decoder on the prefix at every step, the
// argmax (never padding or BOS; EOS not before min_length, forced at max_length) and the softmax
// over `allowed` (a shortlist's tokens; empty: all V). `outside`: a token not allowed would have won.
struct Recomputed {
  std::vector<int32_t> tokens;
  double score = 0;
  bool outside = false;
};
Recomputed recompute_greedy(const Transformer& m, const std::vector<int32_t>& source, int64_t max_length,
                            std::vector<int32_t> allowed = {}, int64_t min_length = 0) {
  const int64_t V = m.config().vocab_size;
  std::vector<char> is_allowed(static_cast<size_t>(V), allowed.empty());
  for (int32_t v : allowed) is_allowed[v] = 1;
  Recomputed r;
  for (int64_t t = 0; t < max_length; ++t) {
    const Batch batch = make_batch({source}, {r.tokens}, m.config());
    const Tensor logits = m.forward(m.context(), batch, nullptr);
    const double* z = logits.data<double>() + t * V;
    double max = -INFINITY, sum = 0;
    for (int32_t v = 0; v < V; ++v)
      if (is_allowed[v]) max = std::max(max, z[v]);
    for (int32_t v = 0; v < V; ++v)
      if (is_allowed[v]) sum += std::exp(z[v] - max);
    auto candidate = [&](int32_t v) { return v != 0 && v != 2 && (v != 3 || t + 1 >= min_length); };
    const bool last = t + 1 >= max_length;
    int32_t best = last ? 3 : -1, best_any = -1;
    for (int32_t v = 0; v < V && !last; ++v) {
      if (!candidate(v)) continue;
      if (is_allowed[v] && (best < 0 || z[v] > z[best])) best = v;
      if (best_any < 0 || z[v] > z[best_any]) best_any = v;
    }
    r.outside |= !last && !is_allowed[best_any];
    r.score += z[best] - max - std::log(sum);
    if (best == 3) break;
    r.tokens.push_back(best);
  }
  return r;
}

TEST(Decode, CachedStepsMatchRecomputingTheDecoder) {
  for (bool pre_norm : {false, true}) {
    const auto m = make_model(13, 3, DType::F64, pre_norm);
    SearchOptions o;
    o.max_length_a = 0;
    o.max_length_b = 8;
    const std::vector<Hypothesis> cached = greedy_search(*m, kSources, o);
    for (size_t b = 0; b < kSources.size(); ++b) {
      const Recomputed r = recompute_greedy(*m, kSources[b], 8);
      EXPECT_EQ(cached[b].tokens, r.tokens) << "sentence " << b << " pre_norm " << pre_norm;
      EXPECT_NEAR(cached[b].score, r.score, 1e-9) << "sentence " << b;
      EXPECT_NEAR(cached[b].score, sequence_score(*m, kSources[b], cached[b].tokens), 1e-9);
    }
  }
}

TEST(Decode, BeamOfOneIsGreedy) {
  const auto m = make_model(17, 5);
  SearchOptions o;
  o.beam_size = 1;
  const auto greedy = greedy_search(*m, kSources, o);
  const auto beam = beam_search(*m, kSources, o);
  for (size_t b = 0; b < kSources.size(); ++b) {
    EXPECT_EQ(beam[b][0].tokens, greedy[b].tokens) << "sentence " << b;
    EXPECT_NEAR(beam[b][0].score, greedy[b].score, 1e-5);
  }
}

TEST(Decode, WideBeamFindsTheBestSequenceUnderTheLengthPenalty) {
  // Vocabulary: pad 0, unk 1, bos 2, eos 3, and 4, 5. Outputs of at most 4 tokens (EOS included):
  // every sequence is enumerable, and a beam of 64 (> 3³ live prefixes) keeps them all.
  const auto m = make_model(6, 11);
  for (double alpha : {0.0, 0.6, 1.0, 2.0}) {
    SearchOptions o;
    o.beam_size = 64;
    o.length_penalty = alpha;
    o.max_length_a = 0;
    o.max_length_b = 4;
    const std::vector<std::vector<int32_t>> sources = {{4, 5, 4}, {5}, {4, 4, 5, 5, 4}};
    const auto beam = beam_search(*m, sources, o);
    for (size_t b = 0; b < sources.size(); ++b) {
      const testing::Best best = testing::exhaustive_best(*m, sources[b], {}, 4, alpha, {1, 4, 5});
      EXPECT_EQ(beam[b][0].tokens, best.tokens) << "alpha " << alpha << " sentence " << b;
      EXPECT_NEAR(beam[b][0].normalized, best.normalized, 1e-4) << "alpha " << alpha << " sentence " << b;
    }
  }
}

TEST(Decode, NBestListsAreSortedDistinctAndScoredConsistently) {
  const auto m = make_model(17, 7);
  SearchOptions o;
  o.beam_size = 5;
  o.n_best = 5;
  const auto beam = beam_search(*m, kSources, o);
  for (size_t b = 0; b < kSources.size(); ++b) {
    ASSERT_EQ(beam[b].size(), 5u);
    for (size_t i = 0; i < beam[b].size(); ++i) {
      const Hypothesis& h = beam[b][i];
      if (i > 0) {
        EXPECT_GE(beam[b][i - 1].normalized, h.normalized);
      }
      for (size_t j = 0; j < i; ++j) EXPECT_NE(beam[b][j].tokens, h.tokens);
      EXPECT_NEAR(h.score, sequence_score(*m, kSources[b], h.tokens), 1e-4);
      EXPECT_NEAR(h.normalized, h.score / length_penalty(static_cast<int64_t>(h.tokens.size()) + 1, 0.6), 1e-9);
    }
  }
}

TEST(Decode, SentencesTogetherMatchEachAlone) {
  const auto m = make_model(17, 9);
  SearchOptions o;
  const auto together = beam_search(*m, kSources, o);
  const auto greedy_together = greedy_search(*m, kSources, o);
  for (size_t b = 0; b < kSources.size(); ++b) {
    const auto alone = beam_search(*m, {kSources[b]}, o);
    EXPECT_EQ(together[b][0].tokens, alone[0][0].tokens) << "sentence " << b;
    EXPECT_NEAR(together[b][0].score, alone[0][0].score, 1e-4);
    EXPECT_EQ(greedy_together[b].tokens, greedy_search(*m, {kSources[b]}, o)[0].tokens);
  }
}

// The first beam step runs one row per sentence and then widens to K; sentences that end there (a
// one-token source with a maximum length of a · 1 + 0 = 1: EOS only) drop out while the others go
// on. Each sentence's n-best list, scores and attention match decoding it alone.
TEST(Decode, SentencesEndingAtTheFirstStepLeaveTheOthersUnchanged) {
  const auto m = make_model(17, 21);
  SearchOptions o;
  o.beam_size = 3;
  o.n_best = 2;
  o.max_length_a = 1.0;
  o.max_length_b = 0.0;
  o.record_attention = true;
  const std::vector<std::vector<int32_t>> sources = {{7}, {4, 5, 6, 7}, {8}, {10, 4, 11, 5, 12, 6}};
  const auto together = beam_search(*m, sources, o);
  ASSERT_EQ(together.size(), sources.size());
  for (size_t b = 0; b < sources.size(); ++b) {
    const auto alone = beam_search(*m, {sources[b]}, o)[0];
    ASSERT_EQ(together[b].size(), alone.size()) << "sentence " << b;
    for (size_t i = 0; i < alone.size(); ++i) {
      EXPECT_EQ(together[b][i].tokens, alone[i].tokens) << "sentence " << b << " hypothesis " << i;
      EXPECT_NEAR(together[b][i].score, alone[i].score, 1e-4);
      const std::vector<double> a = together[b][i].attention.to_doubles(), e = alone[i].attention.to_doubles();
      ASSERT_EQ(a.size(), e.size());
      for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], e[j], 1e-5) << "sentence " << b;
    }
    if (sources[b].size() == 1) {
      ASSERT_EQ(together[b].size(), 1u) << "a sentence ending at the first step has one hypothesis";
      EXPECT_TRUE(together[b][0].tokens.empty());
    }
  }
}

TEST(Decode, RecordsEncoderDecoderAttention) {
  const auto m = make_model(17, 13);
  SearchOptions o;
  o.record_attention = true;
  for (const auto& hyps : {beam_search(*m, kSources, o), [&] {
                             std::vector<std::vector<Hypothesis>> g;
                             for (auto& h : greedy_search(*m, kSources, o)) g.push_back({h});
                             return g;
                           }()}) {
    for (size_t b = 0; b < kSources.size(); ++b) {
      const Tensor& a = hyps[b][0].attention;  // [layers, heads, T, S]
      const int64_t T = static_cast<int64_t>(hyps[b][0].tokens.size()) + 1, S = static_cast<int64_t>(kSources[b].size()) + 1;
      ASSERT_EQ(a.shape(), Shape({2, 2, T, S}));
      const float* p = a.data<float>();
      for (int64_t row = 0; row < 2 * 2 * T; ++row) {
        double sum = 0;
        for (int64_t s = 0; s < S; ++s) sum += p[row * S + s];
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    }
  }
}

TEST(Decode, MinimumLengthForcesTheOutputLength) {
  const auto m = make_model(17, 3);
  SearchOptions o;
  o.max_length_a = 0;
  o.max_length_b = 9;
  o.min_length = 9;  // exactly 8 tokens + EOS
  for (const Hypothesis& h : greedy_search(*m, kSources, o)) EXPECT_EQ(h.tokens.size(), 8u);
  for (const auto& n : beam_search(*m, kSources, o)) EXPECT_EQ(n[0].tokens.size(), 8u);
  for (const auto& n : beam_search(*m, kSources, o))
    for (int32_t t : n[0].tokens) EXPECT_NE(t, 3) << "EOS inside a forced-length output";
}

// A shortlist that allows target tokens 4, 6, 9 and 11 (its 4 most frequent; none per source token).
Shortlist allowing_4_6_9_11(int64_t vocab) {
  return Shortlist::build({{4}}, {{4, 6, 9, 11}}, vocab, {.per_source = 0, .frequent = 4}, "");
}

TEST(Decode, ShortlistRestrictsSearchToItsTokensAndRenormalizes) {
  const auto m = make_model(13, 3, DType::F64);
  const Shortlist shortlist = allowing_4_6_9_11(13);
  const std::vector<int32_t> allowed = {3, 4, 6, 9, 11};  // EOS always
  // min_length 3 bans EOS (column 0 of the restricted logits, not column 3) for two steps.
  for (const int64_t min_length : {0, 3}) {
    SCOPED_TRACE(::testing::Message() << "min_length " << min_length);
    SearchOptions o;
    o.max_length_a = 0;
    o.max_length_b = 8;
    o.min_length = min_length;
    const std::vector<Hypothesis> greedy = greedy_search(*m, kSources, o, &shortlist);
    bool outside = false;  // would the unrestricted model have produced a token outside the list?
    for (size_t b = 0; b < kSources.size(); ++b) {
      const Recomputed r = recompute_greedy(*m, kSources[b], 8, allowed, min_length);
      outside |= r.outside;
      EXPECT_EQ(greedy[b].tokens, r.tokens) << "sentence " << b;
      EXPECT_NEAR(greedy[b].score, r.score, 1e-9) << "sentence " << b;
      EXPECT_GE(static_cast<int64_t>(greedy[b].tokens.size()) + 1, min_length);
    }
    EXPECT_TRUE(outside) << "the shortlist never mattered: the test checks nothing";
    o.beam_size = 4;
    o.n_best = 4;
    const auto beam = beam_search(*m, kSources, o, &shortlist);
    for (size_t b = 0; b < kSources.size(); ++b) {
      for (const Hypothesis& h : beam[b]) {
        for (int32_t t : h.tokens) EXPECT_TRUE(t == 4 || t == 6 || t == 9 || t == 11) << "token " << t;
        EXPECT_GE(static_cast<int64_t>(h.tokens.size()) + 1, min_length);
        EXPECT_NEAR(h.score, sequence_score(*m, kSources[b], h.tokens, allowed), 1e-9) << "sentence " << b;
      }
    }
  }
}

// A selection with nothing allowed (only EOS, banned before the minimum length) ends each sentence
// with EOS, in beam search as in greedy search, instead of failing.
TEST(Decode, ShortlistWithNothingAllowedEndsWithEos) {
  const auto m = make_model(13, 3, DType::F64);
  const Shortlist only_eos = Shortlist::build({{4}}, {{3}}, 13, {.per_source = 0, .frequent = 1}, "");
  ASSERT_EQ(only_eos.select({{5}}, {3}), (std::vector<int32_t>{3}));
  SearchOptions o;
  o.min_length = 4;
  for (const Hypothesis& h : greedy_search(*m, kSources, o, &only_eos)) EXPECT_TRUE(h.tokens.empty());
  o.beam_size = 3;
  for (const auto& n : beam_search(*m, kSources, o, &only_eos)) {
    ASSERT_FALSE(n.empty());
    EXPECT_TRUE(n[0].tokens.empty());
    EXPECT_NEAR(n[0].score, 0.0, 1e-12);  // log p(EOS) = 0 when EOS is all there is
  }
}

TEST(Decode, ShortlistOfTheWholeVocabularyChangesNothing) {
  const auto m = make_model(13, 7, DType::F64);
  std::vector<int32_t> all;
  for (int32_t v = 0; v < 13; ++v) all.push_back(v);
  const Shortlist shortlist = Shortlist::build({{4}}, {all}, 13, {.per_source = 0, .frequent = 13}, "");
  SearchOptions o;
  o.n_best = 2;
  const auto plain = beam_search(*m, kSources, o);
  const auto plain_greedy = greedy_search(*m, kSources, o);
  const auto listed = beam_search(*m, kSources, o, &shortlist);
  const auto listed_greedy = greedy_search(*m, kSources, o, &shortlist);
  for (size_t b = 0; b < kSources.size(); ++b) {
    for (size_t h = 0; h < 2; ++h) {
      EXPECT_EQ(listed[b][h].tokens, plain[b][h].tokens) << "sentence " << b;
      EXPECT_NEAR(listed[b][h].score, plain[b][h].score, 1e-9);
    }
    EXPECT_EQ(listed_greedy[b].tokens, plain_greedy[b].tokens);
    EXPECT_NEAR(listed_greedy[b].score, plain_greedy[b].score, 1e-9);
  }
}

// restrict_output's logits are the selected columns of the full projection's, with float32, packed
// and int8 weights alike.
TEST(Decode, RestrictedOutputScoresTheSelectedColumns) {
  const std::vector<int32_t> ids = {1, 3, 4, 8, 15, 16, 22, 28};
  for (const char* kind : {"float32", "packed", "int8"}) {
    SCOPED_TRACE(kind);
    const auto m = make_model(29, 4);
    if (std::string(kind) == "packed") m->pack_weights();
    if (std::string(kind) == "int8") m->quantize_int8();
    const Context ctx = m->context();
    const Batch batch = make_batch(kSources, std::vector<std::vector<int32_t>>(kSources.size()), m->config());
    const Tensor memory = m->encode(ctx, batch.src, batch.src_lengths, nullptr);
    DecodeState full = m->start_decoding(ctx, memory, batch.src_lengths, 4);
    DecodeState part = m->start_decoding(ctx, memory, batch.src_lengths, 4);
    m->restrict_output(ctx, part, ids);
    const int64_t B = static_cast<int64_t>(kSources.size());
    for (int32_t token : {2, 7, 5}) {
      const Tensor tokens = Tensor::from<int32_t>({B}, std::vector<int32_t>(kSources.size(), token));
      const Tensor a = m->decode_step(ctx, full, tokens), b = m->decode_step(ctx, part, tokens);
      ASSERT_EQ(b.shape(), Shape({B, static_cast<int64_t>(ids.size())}));
      for (int64_t r = 0; r < B; ++r)
        for (size_t j = 0; j < ids.size(); ++j)
          EXPECT_NEAR(b.data<float>()[r * 8 + j], a.data<float>()[r * 29 + ids[j]], 1e-4)
              << "row " << r << " token " << ids[j];
    }
  }
  const auto m = make_model(29, 4);
  DecodeState s;
  testing::expect_error([&] { m->restrict_output(m->context(), s, {4, 4}); }, {"sorted, unique", "got 4"});
  testing::expect_error([&] { m->restrict_output(m->context(), s, {4, 29}); }, {"got 29"});
  const Shortlist other = allowing_4_6_9_11(30);
  testing::expect_error([&] { greedy_search(*m, kSources, SearchOptions{}, &other); },
                        {"vocabulary of 30 tokens", "has 29"});
}

// The decoding cache holds start_decoding's hypotheses per sentence: widening past them is refused
// with the counts, and so is a request for none.
TEST(Decode, ReorderBeyondTheCachesHypothesesIsRefused) {
  const auto m = make_model(17, 3);
  const Context ctx = m->context();
  const Batch batch = make_batch(kSources, std::vector<std::vector<int32_t>>(kSources.size()), m->config());
  const Tensor memory = m->encode(ctx, batch.src, batch.src_lengths, nullptr);
  const int32_t B = static_cast<int32_t>(kSources.size());
  DecodeState state = m->start_decoding(ctx, memory, batch.src_lengths, 4, false, 2);
  m->decode_step(ctx, state, Tensor::from<int32_t>({B}, std::vector<int32_t>(kSources.size(), 2)));
  std::vector<int32_t> three(3 * kSources.size());
  for (size_t i = 0; i < three.size(); ++i) three[i] = static_cast<int32_t>(i / 3);
  const std::string want = std::to_string(three.size()) + " hypotheses exceed the " + std::to_string(2 * B) + " rows";
  testing::expect_error([&] { m->reorder(state, Tensor::from<int32_t>({3 * B}, three)); }, {want.c_str()});
  testing::expect_error([&] { m->start_decoding(ctx, memory, batch.src_lengths, 4, false, 0); },
                        {"at least 1 hypothesis per sentence, got 0"});
}

TEST(Decode, RejectsBadOptions) {
  const auto m = make_model(17, 1);
  SearchOptions o;
  o.beam_size = 0;
  EXPECT_THROW(beam_search(*m, kSources, o), Error);
  o.beam_size = 2;
  o.n_best = 3;
  EXPECT_THROW(beam_search(*m, kSources, o), Error);
}

}  // namespace
}  // namespace tfm

namespace tfm {
namespace {

// The memory estimate that translation checks before it starts: beam search's top-k grows with
// sentences · K · 2K, so with a small vocabulary (the beam of 10,000 ran on the tiny model)
// doubling the beam more than doubles it (the caches, linear in K, are still comparable at 1,024);
// twice the sentences, twice the
// estimate; recorded attention adds to it; and an absurd beam or length saturates, not overflows.
TEST(SearchMemory, EstimateGrowsAsTheSearchDoes) {
  ModelConfig c = tiny_decoding_config(120);
  SearchOptions o;
  auto estimate = [&](int64_t sentences, int64_t beam) {
    o.beam_size = beam;
    return static_cast<double>(estimate_search_bytes(c, sentences, 25, o));
  };
  const double doubled = estimate(64, 1024) / estimate(64, 512);
  EXPECT_GT(doubled, 2.5);
  EXPECT_LT(doubled, 4.0);
  EXPECT_NEAR(estimate(128, 4) / estimate(64, 4), 2.0, 0.05);
  EXPECT_GT(estimate(64, 4), 64.0 * 4 * 120 * 4);  // at least one step's logits
  o.beam_size = 4;
  const double plain = static_cast<double>(estimate_search_bytes(c, 64, 25, o));
  o.record_attention = true;
  EXPECT_GT(static_cast<double>(estimate_search_bytes(c, 64, 25, o)), plain);
  o.max_length_b = 1e18;
  EXPECT_EQ(estimate_search_bytes(c, 64, 25, o), std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace tfm
