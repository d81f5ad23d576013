// transformer::Encoder: embeddings against the model's own encode() pooled here (mean, cls, last,
// none, normalized), padding that does not change a sentence's embedding, the encoder of an
// encoder-decoder model, and the refusals of bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "model/checkpoint.h"
#include "model/transformer.h"
#include "testing/errors.h"
#include "testing/fixture.h"
#include "transformer/encoder.h"

namespace tfm {
namespace {

using transformer::EmbedOptions;
using transformer::Encoder;
using transformer::EncoderOptions;
using transformer::Pooling;

// A BERT-like tiny encoder-only model (learned positions, segments, embedding norm, post-norm).
ModelConfig bert_config() {
  ModelConfig c = model_preset("tiny");
  c.architecture = "encoder-only";
  c.vocab_size = 13;
  c.d_model = 8;
  c.heads = 2;
  c.d_ff = 12;
  c.encoder_layers = 2;
  c.positions = "learned";
  c.max_positions = 16;
  c.token_types = 2;
  c.embedding_norm = true;
  c.scale_embeddings = false;
  c.activation = "gelu";
  return c;
}

std::string saved_model(const ModelConfig& c, const std::string& name) {
  const std::string path = testing::temp_path(name);
  Transformer m(c);
  m.init_parameters(11);
  save_model(m, path);
  return path;
}

EncoderOptions ids_only(EncoderOptions::Weights w = EncoderOptions::Weights::kPlain) {
  EncoderOptions o;
  o.need_vocab = false;
  o.weights = w;
  return o;
}

// The hidden states of one sequence alone, from the model's encode(): [L, D] row-major.
std::vector<float> hidden_alone(const Transformer& m, const std::vector<int32_t>& ids,
                                const std::vector<int32_t>& types = {}) {
  const auto L = static_cast<int64_t>(ids.size());
  Tensor src = Tensor::empty({1, L}, DType::I32), lengths = Tensor::empty({1}, DType::I32), tt;
  std::copy(ids.begin(), ids.end(), src.data<int32_t>());
  lengths.data<int32_t>()[0] = static_cast<int32_t>(L);
  if (!types.empty()) {
    tt = Tensor::empty({1, L}, DType::I32);
    std::copy(types.begin(), types.end(), tt.data<int32_t>());
  }
  const Tensor h = m.encode(m.context(), src, lengths, nullptr, tt);
  return std::vector<float>(h.data<float>(), h.data<float>() + h.numel());
}

// The test's own pooling of hidden states [L, D].
std::vector<float> pooled(const std::vector<float>& h, int64_t D, Pooling p, bool normalize) {
  const auto L = static_cast<int64_t>(h.size()) / D;
  std::vector<float> out(static_cast<size_t>(D), 0.0f);
  if (p == Pooling::kNone) out = h;
  for (int64_t d = 0; d < D && p != Pooling::kNone; ++d) {
    if (p == Pooling::kCls) out[d] = h[d];
    else if (p == Pooling::kLast) out[d] = h[(L - 1) * D + d];
    else if (p == Pooling::kMax)
      for (int64_t t = 0; t < L; ++t) out[d] = t == 0 ? h[d] : std::max(out[d], h[t * D + d]);
    else {
      double s = 0;
      for (int64_t t = 0; t < L; ++t) s += h[t * D + d];
      out[d] = static_cast<float>(s / L);
    }
  }
  if (normalize)
    for (size_t r = 0; r < out.size() / D; ++r) {
      double n = 0;
      for (int64_t d = 0; d < D; ++d) n += out[r * D + d] * out[r * D + d];
      for (int64_t d = 0; d < D; ++d) out[r * D + d] = static_cast<float>(out[r * D + d] / std::sqrt(n));
    }
  return out;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, double tolerance) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tolerance) << "at " << i;
}

const std::vector<std::vector<int32_t>> kInputs = {{2, 4, 5, 6, 3}, {2, 7, 3}, {2, 8, 9, 10, 11, 12, 4, 3}};

TEST(Encoder, EmbedsAsEncodePooled) {
  const std::string path = saved_model(bert_config(), "bert.safetensors");
  const auto model = load_model(path);
  const Encoder encoder(path, ids_only());
  EXPECT_EQ(encoder.dim(), 8);
  for (Pooling p : {Pooling::kMean, Pooling::kCls, Pooling::kLast, Pooling::kMax, Pooling::kNone})
    for (bool normalize : {false, true}) {
      SCOPED_TRACE(std::string(transformer::pooling_name(p)) + (normalize ? " normalized" : ""));
      EmbedOptions o;
      o.pooling = p;
      o.normalize = normalize;
      o.batch_sentences = 2;
      const auto out = encoder.embed_ids(kInputs, o);
      ASSERT_EQ(out.size(), kInputs.size());
      for (size_t i = 0; i < kInputs.size(); ++i) {
        EXPECT_EQ(out[i].ids, kInputs[i]);
        EXPECT_EQ(out[i].rows, p == Pooling::kNone ? static_cast<int64_t>(kInputs[i].size()) : 1);
        expect_near(out[i].values, pooled(hidden_alone(*model, kInputs[i]), 8, p, normalize), 1e-5);
      }
    }
  // Token types reach the encoder.
  const std::vector<std::vector<int32_t>> types = {{0, 0, 1, 1, 1}, {0, 0, 0}, {0, 0, 0, 0, 1, 1, 1, 1}};
  const auto typed = encoder.embed_ids(kInputs, {}, types);
  for (size_t i = 0; i < kInputs.size(); ++i)
    expect_near(typed[i].values, pooled(hidden_alone(*model, kInputs[i], types[i]), 8, Pooling::kMean, false), 1e-5);
}

// Mean pooling ignores padding: a sentence alone and in a batch with a longer one embed alike, with
// packed weights as with plain ones.
TEST(Encoder, PaddingDoesNotChangeAnEmbedding) {
  const std::string path = saved_model(bert_config(), "bert_padding.safetensors");
  for (auto w : {EncoderOptions::Weights::kPlain, EncoderOptions::Weights::kPacked}) {
    const Encoder encoder(path, ids_only(w));
    const auto alone = encoder.embed_ids({kInputs[1]});
    const auto batched = encoder.embed_ids(kInputs);
    expect_near(alone[0].values, batched[1].values, 1e-6);
  }
}

// The encoder of the committed encoder-decoder model embeds text: tokens + end of sentence, as
// translation reads a source.
TEST(Encoder, EmbedsWithTheEncoderOfATranslationModel) {
  const std::string path = std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors";
  const Encoder encoder(path);
  EXPECT_EQ(encoder.architecture(), "encoder-decoder");
  const auto model = load_model(path);
  const std::vector<int32_t> ids = encoder.encode("three hundred and five");
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids.back(), model->config().eos_id);
  const auto out = encoder.embed({"three hundred and five", ""});
  EXPECT_EQ(out[0].ids, ids);
  expect_near(out[0].values, pooled(hidden_alone(*model, ids), model->config().d_model, Pooling::kMean, false), 1e-5);
  EXPECT_EQ(out[1].ids, std::vector<int32_t>{model->config().eos_id});  // an empty text: the specials alone
}

TEST(Encoder, RefusesBadInputNamingIt) {
  const std::string path = saved_model(bert_config(), "bert_errors.safetensors");
  const Encoder encoder(path, ids_only());
  testing::expect_error([&] { encoder.embed_ids({{2, 3}, {}}); }, {"sentence 1: there are no tokens to embed"});
  testing::expect_error([&] { encoder.embed_ids({{2, 0, 3}}); }, {"sentence 0: token id 0 is the padding id"});
  testing::expect_error([&] { encoder.embed_ids({{2, 13}}); }, {"token id 13 is outside the vocabulary [0, 13)"});
  EmbedOptions small;
  small.max_input_tokens = 4;
  testing::expect_error([&] { encoder.embed_ids(kInputs, small); },
                        {"sentence 0: it has 5 tokens (specials included), more than the input token limit of 4"});
  testing::expect_error([&] { encoder.embed_ids({std::vector<int32_t>(17, 4)}); }, {"more than the model's 16 learned"});
  testing::expect_error([&] { encoder.embed_ids({{2, 3}}, {}, {{0, 2}}); },
                        {"token type 2 is outside the model's token types [0, 2)"});
  testing::expect_error([&] { encoder.embed_ids({{2, 3}}, {}, {{0}}); }, {"it has 2 tokens but 1 token types"});
  testing::expect_error([&] { encoder.embed({"a"}); }, {"loaded without a vocabulary"});
  testing::expect_error([] { transformer::parse_pooling("sum"); },
                        {"unknown pooling 'sum' (mean, cls, last, max or none)"});
  EmbedOptions bad;
  bad.batch_sentences = 0;
  testing::expect_error([&] { encoder.embed_ids(kInputs, bad); }, {"batch size must be in [1, 4096] sentences, got 0"});
  ModelConfig gpt = bert_config();
  gpt.architecture = "decoder-only";
  gpt.decoder_layers = 1;
  gpt.token_types = 0;
  const std::string gpt_path = saved_model(gpt, "gpt_refused.safetensors");
  testing::expect_error([&] { Encoder e(gpt_path, ids_only()); }, {"decoder-only model, which has no encoder"});
}

}  // namespace
}  // namespace tfm
