// Hugging Face's causal language models imported (GPT-2, Llama, Qwen2, Mistral) against what
// transformers computed for the same folders (tests/fixtures/hf/*/reference.json, written by
// tools/make_hf_decoder_fixtures.py), Llama with scaled rotary rates included: teacher-forced
// logits, greedy and beam-4 generate(); the configurations refused; float16, bfloat16 and sharded
// checkpoints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "import/hf_common.h"
#include "model/checkpoint.h"
#include "model/transformer.h"
#include "testing/errors.h"
#include "testing/fixture.h"
#include "transformer/generator.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::all_close;

std::string folder(const std::string& name) { return std::string(TFM_FIXTURE_DIR) + "/hf/" + name; }

json reference(const std::string& name) { return read_hf_json(fs::path(folder(name)) / "reference.json"); }

// The imported model with its converted parameters.
std::unique_ptr<Transformer> build(const ImportedModel& m) {
  auto model = std::make_unique<Transformer>(m.config);
  EXPECT_EQ(static_cast<size_t>(model->params().size()), m.tensors.size()) << "parameters and tensors converted";
  for (const NamedTensor& t : m.tensors) {
    const int id = model->params().find(t.name);
    EXPECT_GE(id, 0) << t.name << " is not a parameter";
    if (id >= 0) model->params().value(id).copy_from(t.tensor);
  }
  return model;
}

std::vector<std::vector<int32_t>> id_lists(const json& lists) {
  std::vector<std::vector<int32_t>> out;
  for (const json& l : lists) out.push_back(l.get<std::vector<int32_t>>());
  return out;
}

// The prompts in one right-padded batch (lengths differ); each row's logits up to its length must
// be Hugging Face's for that prompt alone.
void expect_logits(const Transformer& model, const json& ref, double tolerance) {
  const auto prompts = id_lists(ref["prompts"]);
  const auto B = static_cast<int64_t>(prompts.size());
  int64_t T = 0;
  for (const auto& p : prompts) T = std::max<int64_t>(T, static_cast<int64_t>(p.size()));
  Batch batch;
  batch.tgt_in = Tensor::zeros({B, T}, DType::I32);
  batch.tgt_lengths = Tensor::empty({B}, DType::I32);
  for (int64_t b = 0; b < B; ++b) {
    std::copy(prompts[b].begin(), prompts[b].end(), batch.tgt_in.data<int32_t>() + b * T);
    batch.tgt_lengths.data<int32_t>()[b] = static_cast<int32_t>(prompts[b].size());
  }
  const Tensor logits = model.forward(model.context(), batch, nullptr);  // [B, T, V]
  const int64_t V = model.config().vocab_size;
  for (int64_t b = 0; b < B; ++b) {
    const auto L = static_cast<int64_t>(prompts[b].size());
    std::vector<float> want;
    for (const json& row : ref["logits"][b])
      for (const json& v : row) want.push_back(v.get<float>());
    const Tensor got = logits.view({B * T, V}).rows(b * T, L);
    EXPECT_TRUE(all_close(got, Tensor::from<float>({L, V}, want), 0, tolerance)) << "prompt " << b;
  }
}

// A model file of the imported model (no vocabulary: generation by ids).
std::string save_imported(const ImportedModel& m, const std::string& name) {
  const std::string path = testing::temp_path(name + ".safetensors");
  save_model(*build(m), path);
  return path;
}

// Greedy and beam-4 generation through the Generator, by ids, as generate() did.
void expect_generation(const ImportedModel& m, const std::string& name, const json& ref) {
  transformer::GeneratorOptions load;
  load.need_vocab = false;
  const transformer::Generator g(save_imported(m, name), load);
  const auto prompts = id_lists(ref["prompts"]);
  for (const auto& [key, beam] : {std::pair{"greedy", 1}, std::pair{"beam4", 4}}) {
    transformer::GenerationOptions o;
    o.max_new_tokens = ref["max_new_tokens"].get<int64_t>();
    o.search.beam_size = beam;
    o.search.length_penalty = 1.0;
    o.search.length_normalization = transformer::SearchOptions::LengthNormalization::kPower;
    o.search.beam_stop = transformer::SearchOptions::BeamStop::kNoBetterLive;
    const auto out = g.generate_batch_ids(prompts, o);
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_EQ(out[i].best().ids, ref[key][i].get<std::vector<int32_t>>()) << name << " " << key << ", prompt " << i;
  }
}

// Without BOS (GPT-2's bos_token_id is its end's) a sequence's first token is context: its score is
// Σ log p of the tokens after it and of the end, from Hugging Face's logits of the same ids.
TEST(HfDecoderGeneration, ScoresWithoutBosFromTheFirstToken) {
  const ImportedModel m = import_hf_without_vocabulary(folder("gpt2"));
  ASSERT_EQ(m.config.bos_id, -1);
  transformer::GeneratorOptions load;
  load.need_vocab = false;
  load.weights = transformer::GeneratorOptions::Weights::kPlain;
  const transformer::Generator g(save_imported(m, "gpt2_score"), load);
  const json ref = reference("gpt2");
  const auto prompts = id_lists(ref["prompts"]);
  const auto scores = g.score_ids(prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    double want = 0;
    for (size_t t = 0; t < prompts[i].size(); ++t) {
      const std::vector<double> row = ref["logits"][i][t].get<std::vector<double>>();
      double lse = 0, top = *std::max_element(row.begin(), row.end());
      for (double v : row) lse += std::exp(v - top);
      const int32_t next = t + 1 < prompts[i].size() ? prompts[i][t + 1] : m.config.eos_id;
      want += row[static_cast<size_t>(next)] - top - std::log(lse);
    }
    EXPECT_NEAR(scores[i].total, want, 1e-3) << "prompt " << i;
    EXPECT_EQ(scores[i].tokens, static_cast<int64_t>(prompts[i].size()));
  }
  // Nothing to start from: refused, naming why.
  EXPECT_THROW(g.generate_batch_ids({{}}), transformer::SentenceError);
}

class DecoderTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DecoderTest, LogitsMatchTransformers) {
  const ImportedModel m = import_hf_without_vocabulary(folder(GetParam()));
  // Float32 sums in another order than torch's over widths of 24 to 48, on logits of a few units.
  expect_logits(*build(m), reference(GetParam()), 1e-4);
}

TEST_P(DecoderTest, GreedyAndBeamSearchMatchGenerate) {
  const ImportedModel m = import_hf_without_vocabulary(folder(GetParam()));
  expect_generation(m, GetParam(), reference(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Hf, DecoderTest, ::testing::Values("gpt2", "llama", "qwen2", "mistral", "llama_rope_llama3",
                                                           "llama_rope_linear", "llama_stops"));

TEST(HfDecoderImport, MapsTheConfiguration) {
  const ModelConfig gpt2 = import_hf_without_vocabulary(folder("gpt2")).config;
  EXPECT_EQ(gpt2.positions, "learned");
  EXPECT_EQ(gpt2.activation, "gelu_tanh");
  EXPECT_EQ(gpt2.bos_id, -1);  // bos_token_id is the end's: no BOS
  const ModelConfig llama = import_hf_without_vocabulary(folder("llama")).config;
  EXPECT_EQ(llama.kv_heads, 2);
  EXPECT_EQ(llama.bos_id, 1);
  EXPECT_EQ(llama.rope_theta, 500.0);
  EXPECT_FALSE(llama.tie_output);
  const ModelConfig qwen2 = import_hf_without_vocabulary(folder("qwen2")).config;
  EXPECT_TRUE(qwen2.tie_output && qwen2.attention_bias);
  EXPECT_EQ(qwen2.attention_window, 0);
  EXPECT_EQ(import_hf_without_vocabulary(folder("mistral")).config.attention_window, 4);
}

// The sharded copy holds the same tensors as the single file, bit for bit.
TEST(HfDecoderImport, ShardedCheckpointImportsTheSameModel) {
  const ImportedModel one = import_hf_without_vocabulary(folder("llama"));
  const ImportedModel sharded = import_hf_without_vocabulary(folder("llama_sharded"));
  ASSERT_EQ(one.tensors.size(), sharded.tensors.size());
  for (size_t i = 0; i < one.tensors.size(); ++i) {
    const Tensor &a = one.tensors[i].tensor, &b = sharded.tensors[i].tensor;
    EXPECT_EQ(one.tensors[i].name, sharded.tensors[i].name);
    ASSERT_EQ(a.shape(), b.shape()) << one.tensors[i].name;
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.bytes()), 0) << one.tensors[i].name;
  }
}

// float32 → float16 or bfloat16, rounded to nearest even as torch's .to(dtype), and back.
float round_to(float x, bool bf16) {
  if (!bf16) return static_cast<float>(static_cast<_Float16>(x));
  uint32_t bits = 0;
  std::memcpy(&bits, &x, 4);
  bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

// A float16 (bfloat16) checkpoint imports the float32 model's weights rounded to that type, and its
// logits are transformers' for those rounded weights computed in float32, to the same 1e-4.
void expect_rounded(const std::string& name, bool bf16) {
  const ImportedModel full = import_hf_without_vocabulary(folder("llama"));
  const ImportedModel half = import_hf_without_vocabulary(folder(name));
  ASSERT_EQ(full.tensors.size(), half.tensors.size());
  for (size_t i = 0; i < full.tensors.size(); ++i) {
    const Tensor &f = full.tensors[i].tensor, &h = half.tensors[i].tensor;
    ASSERT_EQ(f.shape(), h.shape()) << full.tensors[i].name;
    int64_t off = 0;
    for (int64_t j = 0; j < f.numel(); ++j) off += round_to(f.data<float>()[j], bf16) != h.data<float>()[j];
    EXPECT_EQ(off, 0) << full.tensors[i].name << ": values not the float32 ones rounded";
  }
  expect_logits(*build(half), reference(name), 1e-4);
}

TEST(HfDecoderImport, Float16CheckpointIsTheModelRounded) { expect_rounded("llama_f16", false); }
TEST(HfDecoderImport, Bfloat16CheckpointIsTheModelRounded) { expect_rounded("llama_bf16", true); }

// A copy of a fixture folder with config.json changed by `edit`.
std::string edited(const std::string& name, const std::function<void(json&)>& edit) {
  const fs::path dir = testing::temp_path(name + "_edited");
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(folder(name))) fs::copy(e.path(), dir / e.path().filename());
  json config = read_hf_json(dir / "config.json");
  edit(config);
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir.string();
}

void expect_refused(const std::string& name, const std::function<void(json&)>& edit,
                    const std::vector<std::string>& words) {
  try {
    import_hf_without_vocabulary(edited(name, edit));
    ADD_FAILURE() << "accepted, expected an error naming " << ::testing::PrintToString(words);
  } catch (const Error& e) {
    for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

TEST(HfDecoderImport, RefusesWhatItCannotCompute) {
  expect_refused("llama", [](json& c) { c["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; },
                 {"rope_parameters", "yarn"});
  expect_refused("llama", [](json& c) { c.erase("rope_parameters"); c["rope_scaling"] = {{"type", "linear"}}; },
                 {"rope_scaling", "linear"});
  expect_refused("llama", [](json& c) { c["rope_parameters"]["rope_type"] = "llama3"; }, {"llama3"});
  expect_refused("llama", [](json& c) { c["hidden_act"] = "gelu"; }, {"hidden_act", "gelu"});
  expect_refused("llama", [](json& c) { c["head_dim"] = 8; }, {"head_dim", "8"});
  expect_refused("llama", [](json& c) { c["partial_rotary_factor"] = 0.5; }, {"partial_rotary_factor", "0.5"});
  expect_refused("qwen2", [](json& c) {
    c["use_sliding_window"] = true;
    c["sliding_window"] = 4;
    c["max_window_layers"] = 1;
  }, {"use_sliding_window", "max_window_layers 1"});
  expect_refused("gpt2", [](json& c) { c["activation_function"] = "tanh"; }, {"activation_function", "tanh"});
  expect_refused("gpt2", [](json& c) { c["scale_attn_by_inverse_layer_idx"] = true; },
                 {"scale_attn_by_inverse_layer_idx"});
  expect_refused("gpt2", [](json& c) { c["n_layer"] = 1; }, {"transformer.h.1", "n_layer 1"});
}

// A Qwen2 folder whose every layer slides (max_window_layers 0) imports with the window.
TEST(HfDecoderImport, Qwen2SlidingWindowEverywhereIsHonoured) {
  const std::string dir = edited("qwen2", [](json& c) {
    c["use_sliding_window"] = true;
    c["sliding_window"] = 3;
    c["max_window_layers"] = 0;
    c["layer_types"] = {"sliding_attention", "sliding_attention"};
  });
  EXPECT_EQ(import_hf_without_vocabulary(dir).config.attention_window, 3);
}

}  // namespace
}  // namespace tfm
