// Decoding: the cached incremental decoder gives the same tokens and scores as recomputing the
// whole decoder at each step; beam size 1 is greedy search; a wide beam finds the best sequence
// under the length penalty (checked by exhaustive search on a tiny vocabulary); sentences decoded
// together get what they get alone.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "decode/search.h"
#include "model/transformer.h"

namespace tfm {
namespace {

ModelConfig tiny(int64_t vocab) {
  ModelConfig c = model_preset("tiny");
  c.vocab_size = vocab;
  c.d_model = 16;
  c.heads = 2;
  c.d_ff = 24;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  return c;
}

// A model whose output distributions are far from uniform, so that search decisions matter.
std::unique_ptr<Transformer> make_model(int64_t vocab, uint64_t seed, DType dtype = DType::F32, bool pre_norm = false) {
  ModelConfig c = tiny(vocab);
  c.pre_norm = pre_norm;
  auto m = std::make_unique<Transformer>(c, dtype);
  m->init_parameters(seed);
  const Tensor e = m->params().value(m->tgt_embedding);
  std::vector<double> v = e.to_doubles();
  for (double& x : v) x *= 6.0;
  e.copy_from(Tensor::from<double>(e.shape(), v).to(dtype));
  return m;
}

// Σ log p(y_t | y_<t, x) of `target` followed by EOS, by the teacher-forced training forward.
double sequence_score(const Transformer& m, const std::vector<int32_t>& source, const std::vector<int32_t>& target) {
  const Batch batch = make_batch({source}, {target}, m.config());
  const Tensor logits = m.forward(m.context(), batch, nullptr).to(DType::F64);
  const int64_t V = m.config().vocab_size;
  double total = 0;
  for (int64_t t = 0; t <= static_cast<int64_t>(target.size()); ++t) {
    const double* z = logits.data<double>() + t * V;
    double max = z[0], sum = 0;
    for (int64_t v = 1; v < V; ++v) max = std::max(max, z[v]);
    for (int64_t v = 0; v < V; ++v) sum += std::exp(z[v] - max);
    const int32_t y = t < static_cast<int64_t>(target.size()) ? target[t] : m.config().eos_id;
    total += z[y] - max - std::log(sum);
  }
  return total;
}

const std::vector<std::vector<int32_t>> kSources = {{4, 5, 6, 7}, {8, 9}, {10, 4, 11, 5, 12, 6}, {7}};

TEST(Decode, CachedStepsMatchRecomputingTheDecoder) {
  for (bool pre_norm : {false, true}) {
    const auto m = make_model(13, 3, DType::F64, pre_norm);
    SearchOptions o;
    o.max_length_a = 0;
    o.max_length_b = 8;
    const std::vector<Hypothesis> cached = greedy_search(*m, kSources, o);
    for (size_t b = 0; b < kSources.size(); ++b) {
      // Greedy by recomputing: run the full teacher-forced decoder on the prefix at every step.
      std::vector<int32_t> prefix;
      double score = 0;
      for (int64_t t = 0; t < 8; ++t) {
        const Batch batch = make_batch({kSources[b]}, {prefix}, m->config());
        const Tensor logits = m->forward(m->context(), batch, nullptr);
        const double* z = logits.data<double>() + t * 13;
        double max = -INFINITY, sum = 0;
        for (int v = 0; v < 13; ++v) max = std::max(max, z[v]);
        for (int v = 0; v < 13; ++v) sum += std::exp(z[v] - max);
        int32_t best = 3;
        if (t + 1 < 8)
          for (int32_t v = 0; v < 13; ++v)
            if (v != 0 && v != 2 && z[v] > z[best]) best = v;
        score += z[best] - max - std::log(sum);
        if (best == 3) break;
        prefix.push_back(best);
      }
      EXPECT_EQ(cached[b].tokens, prefix) << "sentence " << b << " pre_norm " << pre_norm;
      EXPECT_NEAR(cached[b].score, score, 1e-9) << "sentence " << b;
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
      double best = -INFINITY;
      std::vector<int32_t> best_seq;
      std::function<void(std::vector<int32_t>&)> visit = [&](std::vector<int32_t>& prefix) {
        const double normalized =
            sequence_score(*m, sources[b], prefix) / length_penalty(static_cast<int64_t>(prefix.size()) + 1, alpha);
        if (normalized > best) best = normalized, best_seq = prefix;
        if (prefix.size() + 1 >= 4) return;
        for (int32_t v : {1, 4, 5}) {
          prefix.push_back(v);
          visit(prefix);
          prefix.pop_back();
        }
      };
      std::vector<int32_t> empty;
      visit(empty);
      EXPECT_EQ(beam[b][0].tokens, best_seq) << "alpha " << alpha << " sentence " << b;
      EXPECT_NEAR(beam[b][0].normalized, best, 1e-4) << "alpha " << alpha << " sentence " << b;
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
