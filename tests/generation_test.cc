// Generation with a decoder-only model (decode/generation.cc): greedy generation against the argmax
// of full teacher-forced forward passes recomputed step by step, beam search of width 1 against
// greedy search, sampling reproducible from its seed, streamed tokens against the result, and the
// errors of bad prompts and models; stop ids ending hypotheses as the end of sequence does; scoring
// with a decoder-only model (transformer::Generator::score) against the scores generation gives its
// own tokens.
#include <gtest/gtest.h>

#include <algorithm>

#include "decode/search.h"
#include "decode/search_common.h"
#include "testing/fixture.h"
#include "transformer/generator.h"
#include "transformer/model.h"

namespace tfm {
namespace {

ModelConfig tiny_lm() {
  ModelConfig c = model_preset("tiny");
  c.architecture = "decoder-only";
  c.encoder_layers = 0;
  c.decoder_layers = 2;
  c.vocab_size = 24;
  c.d_model = 16;
  c.heads = 2;
  c.d_ff = 24;
  return c;
}

// Prompts of three lengths, two of one length (decoded together), BOS first.
std::vector<std::vector<int32_t>> prompts(const ModelConfig& c) {
  return {{c.bos_id, 4, 5, 6}, {c.bos_id}, {c.bos_id, 7, 8, 9}, {c.bos_id, 10, 11, 12, 13, 14}};
}

SearchOptions greedy() {
  SearchOptions o;
  o.beam_size = 1;
  return o;
}

// The most probable next token after `seq`, by the whole sequence's forward pass: padding and BOS
// never, EOS only once `allow_eos`.
int32_t full_argmax(const Transformer& m, const std::vector<int32_t>& seq, bool allow_eos) {
  const ModelConfig& c = m.config();
  const auto T = static_cast<int64_t>(seq.size());
  const Tensor ids = Tensor::from<int32_t>({1, T}, seq);
  const Tensor lengths = Tensor::from<int32_t>({1}, {static_cast<int32_t>(T)});
  const Context ctx = m.context();
  const Tensor logits = m.project(ctx, m.decode(ctx, ids, lengths, Tensor(), Tensor(), nullptr));  // [1, T, V]
  const float* last = logits.to_host().data<float>() + (T - 1) * c.vocab_size;
  int32_t best = -1;
  for (int32_t v = 0; v < c.vocab_size; ++v) {
    if (v == c.pad_id || v == c.bos_id || (v == c.eos_id && !allow_eos)) continue;
    if (best < 0 || last[v] > last[best]) best = v;
  }
  return best;
}

class Generation : public ::testing::Test {
 protected:
  void SetUp() override { model_.init_parameters(7); }
  Transformer model_{tiny_lm()};
};

TEST_F(Generation, GreedyIsTheArgmaxOfFullForwardPasses) {
  const auto ps = prompts(model_.config());
  const int64_t max_new = 8, min_new = 2;
  const auto out = generate_search(model_, ps, greedy(), max_new, min_new);
  ASSERT_EQ(out.size(), ps.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    ASSERT_EQ(out[i].size(), 1u);
    const std::vector<int32_t>& got = out[i][0].tokens;
    std::vector<int32_t> seq = ps[i], want;
    for (int64_t t = 0; t < max_new; ++t) {
      const int32_t next = full_argmax(model_, seq, t >= min_new);
      if (next == model_.config().eos_id) break;
      want.push_back(next);
      seq.push_back(next);
    }
    EXPECT_EQ(got, want) << "prompt " << i;
    EXPECT_GE(static_cast<int64_t>(got.size()), min_new);
  }
}

TEST_F(Generation, BeamOfOneIsGreedy) {
  const auto ps = prompts(model_.config());
  SearchOptions o = greedy();
  o.length_penalty = 0;
  for (const auto& p : ps) {
    const search::Sentences one = {p};
    auto g = search::greedy_from(model_, search::start_generation(model_, model_.context(), one, 6, 1), one, o);
    auto b = search::beam_from(model_, search::start_generation(model_, model_.context(), one, 6, 1), one, o);
    ASSERT_EQ(b[0].size(), 1u);
    EXPECT_EQ(b[0][0].tokens, g[0].tokens);
    EXPECT_NEAR(b[0][0].score, g[0].score, 1e-9);
  }
  // A wider beam finds a hypothesis at least as probable (no length penalty: raw scores compared).
  o.beam_size = 4;
  const auto wide = generate_search(model_, ps, o, 6, 0);
  const auto narrow = generate_search(model_, ps, greedy(), 6, 0);
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_GE(wide[i][0].score, narrow[i][0].score - 1e-9);
}

TEST_F(Generation, SamplingIsReproducibleFromTheSeed) {
  const auto ps = prompts(model_.config());
  SearchOptions o = greedy();
  o.sampling_topk = -1;
  o.sampling_temperature = 2.0;
  o.seed = 11;
  const auto a = generate_search(model_, ps, o, 10, 10);
  const auto b = generate_search(model_, ps, o, 10, 10);
  bool differs = false;
  for (uint64_t seed = 12; seed < 15; ++seed) {
    o.seed = seed;
    const auto c = generate_search(model_, ps, o, 10, 10);
    for (size_t i = 0; i < ps.size(); ++i) differs = differs || c[i][0].tokens != a[i][0].tokens;
  }
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(a[i][0].tokens, b[i][0].tokens);
  EXPECT_TRUE(differs) << "four seeds drew the same 10 tokens for every prompt";
}

TEST_F(Generation, StreamedTokensAreTheResult) {
  const auto ps = prompts(model_.config());
  for (int64_t topk : {0, 5}) {
    SearchOptions o = greedy();
    o.sampling_topk = topk;
    std::vector<std::vector<int32_t>> streamed(ps.size());
    const auto out = generate_search(model_, ps, o, 7, 0, [&](int64_t i, int32_t id) { streamed[i].push_back(id); });
    for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(streamed[i], out[i][0].tokens) << "prompt " << i;
  }
}

// The weights of `base` times `scale` with other end ids: eos_id `eos`, stop_ids `stops`.
std::unique_ptr<Transformer> with_ends(const Transformer& base, int32_t eos, std::vector<int32_t> stops,
                                       float scale = 1) {
  ModelConfig c = base.config();
  c.eos_id = eos;
  c.stop_ids = std::move(stops);
  auto m = std::make_unique<Transformer>(c);
  for (int id = 0; id < base.params().size(); ++id) {
    Tensor v = m->params().value(id);
    v.copy_from(base.params().value(id));
    for (float* x = v.data<float>(), *end = x + v.numel(); x != end; ++x) *x *= scale;
  }
  return m;
}

// A token of some best continuation, at index `from` or later, that no special id is.
int32_t token_to_stop_at(const std::vector<std::vector<Hypothesis>>& out, int64_t from) {
  for (const auto& n_best : out) {
    const std::vector<int32_t>& y = n_best[0].tokens;
    for (size_t i = static_cast<size_t>(from); i < y.size(); ++i)
      if (y[i] > 3) return y[i];
  }
  return -1;
}

// A stop id ends a hypothesis exactly as eos_id does, in greedy search, beam search and sampling:
// the weights with eos_id 3 and stop id s generate what they generate with eos_id s and stop id 3
// (tokens, scores; neither id in the output, neither before min_new_tokens), and s ends
// continuations that eos_id 3 alone does not.
TEST_F(Generation, AStopIdEndsAHypothesisAsEosDoes) {
  const auto ps = prompts(model_.config());
  SearchOptions beam;
  beam.beam_size = 4;
  beam.n_best = 2;
  SearchOptions sampled = greedy();
  sampled.sampling_topk = -1;
  sampled.seed = 5;
  const auto peaked = with_ends(model_, 3, {}, 2);  // sharper distributions: longer, varied outputs
  for (SearchOptions o : {greedy(), beam, sampled})
    for (const int64_t min_new : {0, 3}) {
      o.return_scores = true;
      const auto base = generate_search(*peaked, ps, o, 8, min_new);
      const std::string what = cat("beam ", o.beam_size, ", top-k ", o.sampling_topk, ", min_new ", min_new);
      const int32_t s = token_to_stop_at(base, min_new);
      ASSERT_GE(s, 4) << what << ": no continuation has a token to stop at";
      const auto stops = with_ends(*peaked, 3, {s}), swapped = with_ends(*peaked, s, {3});
      const auto a = generate_search(*stops, ps, o, 8, min_new), b = generate_search(*swapped, ps, o, 8, min_new);
      bool shorter = false;
      for (size_t i = 0; i < ps.size(); ++i) {
        ASSERT_EQ(a[i].size(), b[i].size()) << what;
        for (size_t k = 0; k < a[i].size(); ++k) {
          const std::vector<int32_t>& y = a[i][k].tokens;
          EXPECT_EQ(y, b[i][k].tokens) << what << ", prompt " << i;
          EXPECT_EQ(a[i][k].score, b[i][k].score) << what << ", prompt " << i;
          EXPECT_EQ(a[i][k].normalized, b[i][k].normalized) << what << ", prompt " << i;
          EXPECT_GE(static_cast<int64_t>(y.size()), min_new) << what;
          EXPECT_EQ(std::count(y.begin(), y.end(), s) + std::count(y.begin(), y.end(), 3), 0) << what;
        }
        shorter = shorter || a[i][0].tokens.size() < base[i][0].tokens.size();
      }
      EXPECT_TRUE(shorter) << what << ": stop id " << s << " ended no continuation";
      if (o.beam_size > 1) continue;
      // Streaming reports the tokens, not the stop id that ends them.
      std::vector<std::vector<int32_t>> streamed(ps.size());
      generate_search(*stops, ps, o, 8, min_new, [&](int64_t i, int32_t id) { streamed[i].push_back(id); });
      for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(streamed[i], a[i][0].tokens) << what;
    }
}

// Translation searches the same way: a forced target prefix may not hold a stop id, as it may not
// hold eos_id (it would end the hypothesis inside the prefix).
TEST(StopIds, ATargetPrefixMayNotHoldOne) {
  ModelConfig c = tiny_lm();
  c.architecture = "encoder-decoder";
  c.encoder_layers = 1;
  c.stop_ids = {5};
  Transformer m(c);
  m.init_parameters(1);
  try {
    greedy_search(m, {{4, 6}}, greedy(), nullptr, {{7, 5}});
    ADD_FAILURE() << "a prefix with a stop id was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("target prefix token id 5"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(greedy_search(m, {{4, 6}}, greedy(), nullptr, {{7, 6}}));
}

TEST_F(Generation, BadInputIsRefusedByName) {
  auto message = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message([&] { generate_search(model_, {{}}, greedy(), 4, 0); }).find("prompt 0 is empty"),
            std::string::npos);
  EXPECT_NE(message([&] { generate_search(model_, {{1, 99}}, greedy(), 4, 0); }).find("token id 99"),
            std::string::npos);
  EXPECT_NE(message([&] { generate_search(model_, {{1}}, greedy(), 4, 5); }).find("min_new_tokens"),
            std::string::npos);
  SearchOptions beam = greedy();
  beam.beam_size = 2;
  EXPECT_NE(message([&] { generate_search(model_, {{1}}, beam, 4, 0, [](int64_t, int32_t) {}); }).find("beam size 2"),
            std::string::npos);
  ModelConfig c = tiny_lm();
  c.architecture = "encoder-decoder";
  c.encoder_layers = 1;
  Transformer translation(c);
  EXPECT_NE(message([&] { generate_search(translation, {{1}}, greedy(), 4, 0); }).find("encoder-decoder"),
            std::string::npos);
}

// A sequence's score is the log-probability generation gives the same tokens after BOS alone, with
// the end of sequence: greedy and sampled, ended by the model or at the limit.
TEST(GeneratorScore, EqualsTheScoreOfTheSameTokensGenerated) {
  const std::string path = testing::temp_path("score_lm.safetensors");
  transformer::init_model(tiny_lm(), 7, path);
  transformer::GeneratorOptions lo;
  lo.need_vocab = false;
  lo.weights = transformer::GeneratorOptions::Weights::kPlain;
  const transformer::Generator g(path, lo);
  for (int64_t topk : {0, -1}) {
    transformer::GenerationOptions o;
    o.max_new_tokens = 6;
    o.search.sampling_topk = topk;
    o.search.seed = 3;
    const transformer::Hypothesis h = g.generate_batch_ids({{}}, o)[0].best();
    const transformer::Score s = g.score_ids({h.ids})[0];
    EXPECT_NEAR(s.total, h.score, 1e-4) << "top-k " << topk;
    EXPECT_EQ(s.tokens, static_cast<int64_t>(h.ids.size()) + 1);
    EXPECT_FALSE(s.truncated);
  }
  // Over max_input_tokens: the first tokens scored, flagged.
  transformer::ScoreOptions three;
  three.max_input_tokens = 3;
  const transformer::Score cut = g.score_ids({{4, 5, 6, 7, 8}}, three)[0];
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.total, g.score_ids({{4, 5, 6}})[0].total);
  try {
    g.score_ids({{4, 99}});
    ADD_FAILURE() << "an id outside the vocabulary was scored";
  } catch (const transformer::SentenceError& e) {
    EXPECT_NE(std::string(e.what()).find("token id 99"), std::string::npos) << e.what();
  }
  lo.weights = transformer::GeneratorOptions::Weights::kPacked;
  const transformer::Generator packed(path, lo);
  EXPECT_THROW(packed.score_ids({{4}}), transformer::Error);
}

}  // namespace
}  // namespace tfm
