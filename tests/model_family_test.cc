// The model family on one definition: decoder-only and encoder-only models (and the encoder-decoder
// with the new variants) — every parameter's gradient against finite differences in float64, the
// decoding cache against the full forward, padding, checkpoints, int8 and packed inference, the
// parameter layout and the configuration's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/transformer.h"
#include "ops/loss.h"
#include "testing/fixture.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

const std::vector<std::vector<int32_t>> kSequences = {{4, 5, 6, 7, 8}, {9, 4}, {10, 5, 7}};
const std::vector<std::vector<int32_t>> kTargets = {{5, 6, 7}, {8, 9, 10, 4, 6}, {7}};  // the encoder-decoder's

ModelConfig tiny(const std::string& architecture) {
  ModelConfig c = model_preset("tiny");
  c.architecture = architecture;
  c.vocab_size = 11;
  c.d_model = 8;
  c.heads = 2;
  c.d_ff = 12;
  c.encoder_layers = c.decoder_layers = 2;
  return c;
}

// An encoder-only batch: the sequences padded with pad_id, targets the tokens themselves at every
// other position (the rest pad_id, which the loss skips), token types 0 then 1 from the middle.
Batch mlm_batch(const std::vector<std::vector<int32_t>>& seqs, const ModelConfig& c) {
  Batch b = make_batch(seqs, std::vector<std::vector<int32_t>>(seqs.size()), c);
  b.tgt_in = b.tgt_lengths = Tensor();
  const int64_t B = b.src.size(0), S = b.src.size(1);
  b.tgt_out = Tensor::empty({B, S}, DType::I32);
  b.tgt_out.fill(c.pad_id);
  if (c.token_types > 0) b.token_types = Tensor::zeros({B, S}, DType::I32);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t t = 0; t < b.src_lengths.data<int32_t>()[i]; ++t) {
      if (t % 2 == 0) b.tgt_out.data<int32_t>()[i * S + t] = b.src.data<int32_t>()[i * S + t];
      if (c.token_types > 0 && 2 * t >= b.src_lengths.data<int32_t>()[i]) b.token_types.data<int32_t>()[i * S + t] = 1;
    }
  return b;
}

// The architecture's batch of kSequences[which...] (and kTargets for the encoder-decoder).
Batch batch_for(const ModelConfig& c, const std::vector<size_t>& which = {0, 1, 2}) {
  std::vector<std::vector<int32_t>> seqs, targets;
  for (size_t i : which) seqs.push_back(kSequences[i]), targets.push_back(kTargets[i]);
  if (c.architecture == "decoder-only") return make_lm_batch(seqs, c);
  if (c.architecture == "encoder-only") return mlm_batch(seqs, c);
  return make_batch(seqs, targets, c);
}

// Label-smoothed cross-entropy summed over the targets (tgt_out); fills dlogits when given.
double batch_loss(const Transformer& model, const Batch& batch, uint64_t seed, Tensor* dlogits, Transformer::Saved* saved) {
  Rng rng(seed);
  const Tensor logits = model.forward(model.context(&rng), batch, saved);
  const Tensor flat = logits.view({logits.shape().rows(), model.config().vocab_size});
  const Tensor targets = batch.tgt_out.view({batch.tgt_out.numel()});
  Tensor lse = Tensor::empty({flat.size(0)}, flat.dtype());
  const ops::LossArgs args{0.1, model.config().pad_id};
  const double loss = ops::cross_entropy(flat, targets, args, lse).loss;
  if (dlogits) {
    *dlogits = Tensor::zeros(logits.shape(), logits.dtype());
    ops::cross_entropy_backward(flat, targets, lse, args, 1.0, dlogits->view(flat.shape()));
  }
  return loss;
}

struct FamilyCase {
  const char* name;
  void (*set)(ModelConfig&);
};
void PrintTo(const FamilyCase& c, std::ostream* os) { *os << c.name; }

const FamilyCase kCases[] = {
    // GPT-2-like: pre-norm, learned positions, final norm, unscaled, gelu.
    {"gpt_like",
     [](ModelConfig& c) {
       c = tiny("decoder-only");
       c.pre_norm = true;
       c.positions = "learned";
       c.max_positions = 9;
       c.position_offset = 1;
       c.scale_embeddings = false;
       c.activation = "gelu";
     }},
    // No biases anywhere, an untied output with a logits bias, no final norm, no positions.
    {"decoder_bare",
     [](ModelConfig& c) {
       c = tiny("decoder-only");
       c.pre_norm = true;
       c.final_norm = false;
       c.positions = "none";
       c.attention_bias = c.ffn_bias = false;
       c.tie_output = false;
       c.output_bias = true;
     }},
    {"decoder_post_norm_embedding_norm",
     [](ModelConfig& c) {
       c = tiny("decoder-only");
       c.embedding_norm = true;
       c.activation = "swish";
     }},
    // BERT-like: post-norm, learned positions, token types, embedding norm, masked-LM head.
    {"bert_like",
     [](ModelConfig& c) {
       c = tiny("encoder-only");
       c.positions = "learned";
       c.max_positions = 8;
       c.token_types = 2;
       c.embedding_norm = true;
       c.mlm_head = true;
       c.scale_embeddings = false;
       c.activation = "gelu";
     }},
    {"encoder_pre_norm_untied",
     [](ModelConfig& c) {
       c = tiny("encoder-only");
       c.pre_norm = true;
       c.ffn_bias = false;
       c.tie_output = false;
     }},
    {"encoder_decoder_variants",
     [](ModelConfig& c) {
       c = tiny("encoder-decoder");
       c.pre_norm = true;
       c.tie_source_target = false;
       c.positions = "learned";
       c.max_positions = 7;
       c.embedding_norm = true;
       c.attention_bias = false;
     }},
    // Llama-like: RMSNorm, rotary (half-split) on 4 of each head's 6 dimensions, SwiGLU, 2 key/value
    // heads for 4 query heads, no biases, a sliding window of 3.
    {"llama_like",
     [](ModelConfig& c) {
       c = tiny("decoder-only");
       c.d_model = 24, c.heads = 4, c.kv_heads = 2, c.d_ff = 8;
       c.pre_norm = true, c.norm = "rmsnorm", c.scale_embeddings = false, c.tie_output = false;
       c.positions = "rope", c.rotary_dims = 4, c.rope_theta = 50;
       c.activation = "swish", c.gated = true;
       c.attention_bias = c.ffn_bias = false;
       c.attention_window = 3;
     }},
    // The interleaved rotary layout on part of each head, one key/value head (multi-query), GeGLU
    // with biases, post-norm with an RMSNorm on the embeddings, a window of 2.
    {"llama_interleaved_mqa",
     [](ModelConfig& c) {
       c = tiny("decoder-only");
       c.d_model = 24, c.heads = 4, c.kv_heads = 1, c.d_ff = 8;
       c.norm = "rmsnorm", c.embedding_norm = true, c.scale_embeddings = false;
       c.positions = "rope", c.rotary_dims = 4, c.rope_interleaved = true;
       c.activation = "gelu_tanh", c.gated = true;
       c.attention_window = 2;
     }},
    // The variants in an encoder-decoder (encoder-decoder attention keeps its heads and no rope).
    {"encoder_decoder_llama",
     [](ModelConfig& c) {
       c = tiny("encoder-decoder");
       c.pre_norm = true, c.norm = "rmsnorm", c.embedding_norm = true;
       c.positions = "rope", c.kv_heads = 1, c.gated = true, c.activation = "swish", c.attention_window = 2;
     }},
    // An encoder with them: the window without the causal mask, the masked-LM head's norm an RMSNorm.
    {"encoder_llama",
     [](ModelConfig& c) {
       c = tiny("encoder-only");
       c.norm = "rmsnorm", c.embedding_norm = true, c.mlm_head = true;
       c.positions = "rope", c.rope_interleaved = true, c.kv_heads = 1, c.gated = true, c.attention_window = 2;
     }},
};

ModelConfig config_of(const FamilyCase& f) {
  ModelConfig c;
  f.set(c);
  return c;
}

// A float64 model with non-zero biases, so that each bias's gradient is checked.
std::unique_ptr<Transformer> f64_model(const ModelConfig& c, uint64_t seed = 3) {
  auto m = std::make_unique<Transformer>(c, DType::F64);
  m->init_parameters(seed);
  for (int id = 0; id < m->params().size(); ++id)
    if (m->params().name(id).ends_with(".bias")) {
      const Tensor b = m->params().value(id);
      for (int64_t i = 0; i < b.numel(); ++i) b.data<double>()[i] = 0.05 * double((i * 7 + id) % 5) - 0.1;
    }
  return m;
}

class FamilyTest : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(FamilyTest, EveryParameterMatchesFiniteDifferences) {
  const ModelConfig c = config_of(GetParam());
  const auto model = f64_model(c);
  const Batch batch = batch_for(c);
  Transformer::Saved saved;
  Tensor dlogits;
  batch_loss(*model, batch, 99, &dlogits, &saved);
  model->params().zero_grad();
  Rng rng(99);
  const ParamStore& params = model->params();
  std::vector<std::pair<int, int>> reported;
  const std::function<void(int, int)> done = [&](int first, int end) { reported.push_back({first, end}); };
  Context ctx = model->context(&rng);
  ctx.on_grads_done = &done;
  model->backward(ctx, batch, saved, dlogits);
  // Each parameter reported complete once, in grads_done_order()'s order.
  EXPECT_EQ(reported, model->grads_done_order());
  std::vector<int> times(static_cast<size_t>(params.size()), 0);
  for (const auto& [first, end] : reported)
    for (int id = first; id < end; ++id) ++times[static_cast<size_t>(id)];
  for (int id = 0; id < params.size(); ++id) EXPECT_EQ(times[static_cast<size_t>(id)], 1) << params.name(id);
  testing::expect_gradients_match([&] { return batch_loss(*model, batch, 99, nullptr, nullptr); },
                                  {{"parameters", params.values(), params.grads()}},
                                  {.step = 1e-6, .atol = 1e-7, .rtol = 1e-5});
}

TEST_P(FamilyTest, PaddingDoesNotChangeASequencesLogits) {
  const ModelConfig c = config_of(GetParam());
  const auto model = f64_model(c, 5);
  const Batch batch = batch_for(c);
  const std::vector<double> all = model->forward(model->context(), batch, nullptr).to_doubles();
  const int64_t L = batch.tgt_out.size(1), V = c.vocab_size;
  for (size_t b = 0; b < kSequences.size(); ++b) {
    const Batch alone = batch_for(c, {b});
    const std::vector<double> want = model->forward(model->context(), alone, nullptr).to_doubles();
    for (int64_t t = 0; t < alone.tgt_out.size(1); ++t)
      for (int64_t v = 0; v < V; ++v)
        ASSERT_NEAR(all[(b * L + t) * V + v], want[t * V + v], 1e-12) << "sequence " << b << " position " << t;
  }
}

TEST_P(FamilyTest, CheckpointRoundTripsAndCountsItsParameters) {
  const ModelConfig c = config_of(GetParam());
  Transformer model(c);
  model.init_parameters(7);
  EXPECT_EQ(model.params().parameter_count(), parameter_count(c));
  const std::string path = testing::temp_path(cat(GetParam().name, ".safetensors"));
  save_model(model, path);
  const auto loaded = load_model(path);
  EXPECT_EQ(nlohmann::json(loaded->config()), nlohmann::json(c));
  EXPECT_EQ(loaded->params().values().to_doubles(), model.params().values().to_doubles());
  const Batch batch = batch_for(c);
  EXPECT_EQ(loaded->forward(loaded->context(), batch, nullptr).to_doubles(),
            model.forward(model.context(), batch, nullptr).to_doubles());
}

INSTANTIATE_TEST_SUITE_P(Family, FamilyTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Per position of each sequence: decoder-only logits fed through the cache, [B][T][V]: BOS and the
// first `prompt` − 1 tokens as a prompt (decode_prefix; the logits of its positions but the last are
// not returned, an empty row), the rest one step each (decode_step). `split`: the first token by
// decode_step, then the prompt's others by decode_prefix after it.
std::vector<std::vector<std::vector<double>>> incremental(const Transformer& m, const std::vector<std::vector<int32_t>>& seqs,
                                                          size_t prompt = 3, bool split = false) {
  std::vector<std::vector<std::vector<double>>> out;
  const Context ctx = m.context();
  for (const auto& seq : seqs) {
    std::vector<int32_t> in = {m.config().bos_id};
    in.insert(in.end(), seq.begin(), seq.end());
    DecodeState state = m.start_decoding(ctx, 1, static_cast<int64_t>(in.size()));
    const size_t p = std::min(prompt, in.size());
    std::vector<std::vector<double>> rows(p - 1);
    if (split) m.decode_step(ctx, state, Tensor::from<int32_t>({1}, {in[0]}));
    const std::vector<int32_t> ids(in.begin() + (split ? 1 : 0), in.begin() + static_cast<std::ptrdiff_t>(p));
    const Tensor hidden = m.decode_prefix(ctx, state, Tensor::from<int32_t>({1, static_cast<int64_t>(ids.size())}, ids));
    rows.push_back(m.project_step(ctx, state, hidden).to_doubles());
    for (size_t t = p; t < in.size(); ++t)
      rows.push_back(m.decode_step(ctx, state, Tensor::from<int32_t>({1}, {in[t]})).to_doubles());
    out.push_back(rows);
  }
  return out;
}

double log_softmax_at(const std::vector<double>& row, size_t v) {
  double mx = row[0], sum = 0;
  for (double x : row) mx = std::max(mx, x);
  for (double x : row) sum += std::exp(x - mx);
  return row[v] - mx - std::log(sum);
}

TEST(ModelFamily, DecoderOnlyCacheEqualsTheFullForward) {
  for (const FamilyCase& f : kCases) {
    const ModelConfig c = config_of(f);
    if (c.architecture != "decoder-only") continue;
    const auto model = f64_model(c);
    const Batch batch = make_lm_batch(kSequences, c);
    const std::vector<double> full = model->forward(model->context(), batch, nullptr).to_doubles();
    const size_t T = static_cast<size_t>(batch.tgt_in.size(1)), V = static_cast<size_t>(c.vocab_size);
    for (const auto& [prompt, split] : {std::pair{size_t{1}, false}, {size_t{3}, false}, {size_t{6}, false}, {size_t{3}, true}}) {
      const auto steps = incremental(*model, kSequences, prompt, split);
      for (size_t b = 0; b < kSequences.size(); ++b)
        for (size_t t = 0; t < steps[b].size(); ++t)
          for (size_t v = 0; v < V && !steps[b][t].empty(); ++v)
            ASSERT_NEAR(steps[b][t][v], full[(b * T + t) * V + v], 1e-10)
                << f.name << " prompt " << prompt << (split ? " after a step" : "") << " sequence " << b << " position " << t;
    }
  }
}

// int8 and packed weights: decoder-only decoding steps (the fused QKV product) and encoder-only
// forward passes agree with float32, within the int8 and packed tests' tolerances on log-probabilities.
TEST(ModelFamily, Int8AndPackedInferenceAgreeWithFloat32) {
  for (const FamilyCase& f : kCases) {
    const ModelConfig c = config_of(f);
    if (c.has_encoder() && c.has_decoder()) continue;
    for (const char* kind : {"packed", "int8"}) {
      Transformer plain(c), fast(c);
      plain.init_parameters(11);
      fast.init_parameters(11);
      if (std::string(kind) == "packed") fast.pack_weights();
      else fast.quantize_int8();
      const double tolerance = std::string(kind) == "packed" ? 1e-4 : 0.25;
      std::vector<std::vector<double>> a, b;  // rows of logits
      if (c.architecture == "decoder-only") {
        for (const auto& seq : incremental(plain, kSequences)) a.insert(a.end(), seq.begin(), seq.end());
        for (const auto& seq : incremental(fast, kSequences)) b.insert(b.end(), seq.begin(), seq.end());
      } else {
        const Batch batch = batch_for(c);
        a = {plain.forward(plain.context(), batch, nullptr).to_doubles()};
        b = {fast.forward(fast.context(), batch, nullptr).to_doubles()};
      }
      ASSERT_EQ(a.size(), b.size());
      const size_t V = static_cast<size_t>(c.vocab_size);
      for (size_t r = 0; r < a.size(); ++r)
        for (size_t i = 0; i < a[r].size(); ++i) {
          const size_t row = i / V * V;
          const std::vector<double> ra(a[r].begin() + row, a[r].begin() + row + V), rb(b[r].begin() + row, b[r].begin() + row + V);
          ASSERT_NEAR(log_softmax_at(rb, i % V), log_softmax_at(ra, i % V), tolerance) << f.name << " " << kind << " row " << r << " " << i;
        }
    }
  }
}

TEST(ModelFamily, ParametersAreNamedAsDocumented) {
  const auto has = [](const Transformer& m, const std::string& n) { return m.params().find(n) >= 0; };
  ModelConfig gpt = config_of(kCases[0]);
  Transformer g(gpt);
  for (const char* n : {"embed.weight", "positions.weight", "decoder.layers.1.self_attn.q_proj.bias",
                        "decoder.layers.0.self_attn_norm.weight", "decoder.layers.0.ffn.fc2.weight", "decoder.final_norm.bias"})
    EXPECT_TRUE(has(g, n)) << n;
  for (const char* n : {"decoder.layers.0.cross_attn.q_proj.weight", "decoder.layers.0.cross_attn_norm.weight",
                        "encoder.layers.0.ffn.fc1.weight", "output.weight", "encoder.final_norm.weight"})
    EXPECT_FALSE(has(g, n)) << n;
  EXPECT_EQ(g.params().shape(g.params().find("positions.weight")), Shape({9, 8}));
  Transformer bare(config_of(kCases[1]));
  for (const char* n : {"decoder.layers.0.self_attn.k_proj.bias", "decoder.layers.0.ffn.fc1.bias", "decoder.final_norm.weight"})
    EXPECT_FALSE(has(bare, n)) << n;
  EXPECT_TRUE(has(bare, "output.weight") && has(bare, "output.bias"));
  Transformer bert(config_of(kCases[3]));
  for (const char* n : {"embed.weight", "token_types.weight", "embed_norm.weight", "embed_norm.bias", "mlm_head.dense.weight",
                        "mlm_head.dense.bias", "mlm_head.norm.weight", "encoder.layers.1.ffn_norm.bias"})
    EXPECT_TRUE(has(bert, n)) << n;
  EXPECT_FALSE(has(bert, "decoder.layers.0.self_attn.q_proj.weight"));
  // Llama-like: RMSNorm weights only, k and v of 2 heads of 6, fc1 [2F, D].
  Transformer llama(config_of(kCases[6]));
  const auto shape = [&](const std::string& n) { return llama.params().shape(llama.params().find(n)); };
  EXPECT_EQ(shape("decoder.layers.1.self_attn.k_proj.weight"), Shape({12, 24}));
  EXPECT_EQ(shape("decoder.layers.1.self_attn.v_proj.weight"), Shape({12, 24}));
  EXPECT_EQ(shape("decoder.layers.1.self_attn.q_proj.weight"), Shape({24, 24}));
  EXPECT_EQ(shape("decoder.layers.0.ffn.fc1.weight"), Shape({16, 24}));
  EXPECT_EQ(shape("decoder.layers.0.ffn.fc2.weight"), Shape({24, 8}));
  for (const char* n : {"decoder.layers.0.self_attn_norm.weight", "decoder.layers.0.ffn_norm.weight", "decoder.final_norm.weight"})
    EXPECT_TRUE(has(llama, n)) << n;
  for (const char* n : {"decoder.layers.0.self_attn_norm.bias", "decoder.final_norm.bias", "decoder.layers.0.ffn.fc1.bias"})
    EXPECT_FALSE(has(llama, n)) << n;
  Transformer encoder(config_of(kCases[9]));
  for (const char* n : {"embed_norm.bias", "mlm_head.norm.bias", "encoder.layers.0.ffn_norm.bias"}) EXPECT_FALSE(has(encoder, n)) << n;
}

// A default (encoder-decoder) model's file records none of the family's fields, as before them;
// a decoder-only one records those it sets, and loads with them.
TEST(ModelFamily, FilesOfEncoderDecoderModelsRecordOnlyTheFieldsTheyHadBefore) {
  for (const char* architecture : {"encoder-decoder", "decoder-only"}) {
    ModelConfig c = tiny(architecture);
    Transformer m(c);
    const std::string path = testing::temp_path(cat("fields-", architecture, ".safetensors"));
    save_model(m, path);
    const nlohmann::json recorded = nlohmann::json::parse(SafetensorsFile::read(path).metadata().at("config"));
    const char* const family[] = {"max_positions", "final_norm", "embedding_norm", "attention_bias", "ffn_bias",
                                  "token_types", "mlm_head", "norm", "rope_theta", "rotary_dims", "rope_interleaved",
                                  "gated", "kv_heads", "attention_window", "pooling", "normalize_embeddings",
                                  "rope_scaling", "rope_scaling_factor", "rope_low_freq_factor",
                                  "rope_high_freq_factor", "rope_original_max_positions", "stop_ids"};
    for (const char* field : family) EXPECT_FALSE(recorded.contains(field)) << field;
    EXPECT_EQ(recorded.contains("architecture"), std::string(architecture) == "decoder-only");
    EXPECT_EQ(recorded.size() + std::size(family) + (recorded.contains("architecture") ? 0 : 1),
              model_config_fields().size());
    EXPECT_EQ(load_model(path)->config().architecture, architecture);
  }
}

TEST(ModelFamily, LearnedPositionsRefuseASequencePastTheTable) {
  ModelConfig c = config_of(kCases[0]);  // max_positions 9 from offset 1: 8 positions
  Transformer m(c);
  m.init_parameters(1);
  EXPECT_NO_THROW(m.forward(m.context(), make_lm_batch({{4, 5, 6, 7, 8, 9, 10}}, c), nullptr));
  try {
    m.forward(m.context(), make_lm_batch({{4, 5, 6, 7, 8, 9, 10, 4}}, c), nullptr);  // 9 tokens with BOS
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a sequence of 9 tokens is longer than the 8"), std::string::npos) << e.what();
  }
  EXPECT_THROW(m.start_decoding(m.context(), 1, 9), Error);
  DecodeState state = m.start_decoding(m.context(), 1, 8);
  (void)state;
  // Each architecture refuses what it lacks, naming itself.
  const auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const Tensor ids = Tensor::from<int32_t>({1, 2}, {4, 5}), lengths = Tensor::from<int32_t>({1}, {2});
  EXPECT_NE(message([&] { m.start_decoding(m.context(), Tensor::zeros({1, 2, 8}), lengths, 4); })
                .find("the model is decoder-only: decoding over an encoder output needs an encoder-decoder model"),
            std::string::npos);
  EXPECT_NE(message([&] { m.encode(m.context(), ids, lengths, nullptr); }).find("the model is decoder-only: it has no encoder"),
            std::string::npos);
  Transformer bert(config_of(kCases[3]));
  EXPECT_NE(message([&] { bert.start_decoding(bert.context(), 1, 4); }).find("the model is encoder-only: decoding without"),
            std::string::npos);
  EXPECT_NE(message([&] { bert.decode(bert.context(), ids, lengths, Tensor(), Tensor(), nullptr); }).find("it has no decoder"),
            std::string::npos);
}

TEST(ModelFamily, ConfigErrorsNameTheProblem) {
  const auto message = [](void (*set)(ModelConfig&)) {
    ModelConfig c = tiny("encoder-decoder");
    set(c);
    try {
      c.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message([](ModelConfig& c) { c.positions = "learned"; }).find("needs max_positions"), std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.token_types = 2; }).find("token_types (2) needs architecture 'encoder-only'"),
            std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.mlm_head = true; }).find("mlm_head needs architecture"), std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.architecture = "gpt"; }).find("architecture must be one of"), std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.architecture = "gpt"; }).find("'gpt'"), std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.max_positions = -1; }).find("max_positions must be in"), std::string::npos);
  EXPECT_EQ(message([](ModelConfig& c) { c.architecture = "decoder-only", c.encoder_layers = 0; }), "(no error)");
  // The attention's and norm's variants (tiny: 2 heads of 4 dimensions).
  EXPECT_NE(message([](ModelConfig& c) { c.heads = 4, c.kv_heads = 3; }).find("kv_heads 3 does not divide heads 4"),
            std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.kv_heads = 4; }).find("kv_heads must be in [0, heads = 2], got 4"),
            std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.positions = "rope", c.rotary_dims = 3; }).find("rotary_dims must be even"),
            std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.positions = "rope", c.rotary_dims = 6; }).find("head_dim = 4] (0: all), got 6"),
            std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.positions = "rope", c.rope_theta = 0; }).find("rope_theta must be positive, got 0"),
            std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.rotary_dims = 2; }).find("need positions 'rope', got 'interleaved'"),
            std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.positions = "rope", c.d_model = 6, c.heads = 2; }).find("even head_dim"),
            std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.norm = "batchnorm"; }).find("norm must be one of layernorm, rmsnorm, got 'batchnorm'"),
            std::string::npos);
  EXPECT_NE(message([](ModelConfig& c) { c.attention_window = -1; }).find("attention_window must be in"), std::string::npos);
  EXPECT_EQ(message([](ModelConfig& c) { c.positions = "rope", c.d_model = 6, c.heads = 2, c.rotary_dims = 2; }),
            "(no error)");
  // The JSON names the new fields; an unknown one stays an error.
  ModelConfig c;
  from_json(nlohmann::json{{"architecture", "decoder-only"}, {"ffn_bias", false}, {"max_positions", 5}, {"norm", "rmsnorm"},
                           {"kv_heads", 1}, {"gated", true}, {"rope_theta", 5e5}, {"attention_window", 4}},
            c);
  EXPECT_EQ(c.architecture, "decoder-only");
  EXPECT_FALSE(c.ffn_bias);
  EXPECT_TRUE(c.norm == "rmsnorm" && c.kv_heads == 1 && c.gated && c.rope_theta == 5e5 && c.attention_window == 4);
  EXPECT_THROW(from_json(nlohmann::json{{"architectur", "decoder-only"}}, c), Error);
  // Token types given to a model without them.
  ModelConfig e = tiny("encoder-only");
  Transformer m(e);
  Batch b = mlm_batch(kSequences, e);
  b.token_types = Tensor::zeros(b.src.shape(), DType::I32);
  EXPECT_THROW(m.forward(m.context(), b, nullptr), Error);
}

}  // namespace
}  // namespace tfm
