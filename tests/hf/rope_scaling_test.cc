// Scaled rotary rates (Llama 3.1's "llama3" rule and "linear"): the op's rates against the ones
// transformers computes for the same folders (tests/fixtures/hf/llama_rope_*/reference.json, written
// by tools/make_hf_decoder_fixtures.py), the configuration each import maps, its model-file record,
// and the rope types refused. decoder_test.cc compares the logits and generate() of these folders.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "import/hf_common.h"
#include "model/checkpoint.h"
#include "model/transformer.h"
#include "ops/rotary.h"
#include "testing/errors.h"
#include "testing/fixture.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string folder(const std::string& name) { return std::string(TFM_FIXTURE_DIR) + "/hf/" + name; }

json reference(const std::string& name) { return read_hf_json(fs::path(folder(name)) / "reference.json"); }

// The rotary positions an imported configuration describes, over whole heads.
ops::Rotary rotary_of(const ModelConfig& c) {
  ops::Rotary r{c.head_dim(), c.rope_theta, c.rope_interleaved};
  r.scaling = c.rope_scaling == "llama3" ? ops::RotaryScaling::kLlama3
              : c.rope_scaling == "linear" ? ops::RotaryScaling::kLinear
                                           : ops::RotaryScaling::kNone;
  r.factor = c.rope_scaling_factor;
  r.low_freq_factor = c.rope_low_freq_factor;
  r.high_freq_factor = c.rope_high_freq_factor;
  r.original_positions = static_cast<double>(c.rope_original_max_positions);
  return r;
}

// Each pair's rate as the op turns it: the pair (1, 0) at position 1 comes out as (cos r, sin r).
std::vector<double> rates_turned_by_the_op(const ops::Rotary& rope) {
  const int64_t half = rope.dims / 2;
  Tensor x = Tensor::zeros({1, 1, rope.dims}, DType::F64);
  for (int64_t i = 0; i < half; ++i) x.data<double>()[i] = 1.0;
  const Tensor out = Tensor::zeros({1, 1, rope.dims}, DType::F64);
  ops::rotary(x, 1, rope, 1, Tensor(), false, out);
  std::vector<double> rates;
  for (int64_t i = 0; i < half; ++i) rates.push_back(std::atan2(out.data<double>()[i + half], out.data<double>()[i]));
  return rates;
}

class RopeScalingRates : public ::testing::TestWithParam<const char*> {};

// transformers' rates in float64 to 1e-12 relative, from the function and from the op's rotation;
// its float32 buffer (what its model multiplies) to float32's rounding.
TEST_P(RopeScalingRates, MatchTransformers) {
  const ModelConfig c = import_hf_without_vocabulary(folder(GetParam())).config;
  const ops::Rotary rope = rotary_of(c);
  const json ref = reference(GetParam());
  const auto want = ref["inv_freq"].get<std::vector<double>>();
  const auto want32 = ref["inv_freq_float32"].get<std::vector<double>>();
  ASSERT_EQ(static_cast<int64_t>(want.size()), rope.dims / 2);
  const std::vector<double> turned = rates_turned_by_the_op(rope);
  for (size_t i = 0; i < want.size(); ++i) {
    const double got = ops::rotary_rate(rope, static_cast<int64_t>(i));
    EXPECT_NEAR(got, want[i], 1e-12 * want[i]) << GetParam() << " pair " << i;
    EXPECT_NEAR(turned[i], want[i], 1e-12 * want[i]) << GetParam() << " pair " << i << " (the op)";
    EXPECT_NEAR(got, want32[i], 1e-6 * want32[i]) << GetParam() << " pair " << i << " (float32)";
  }
}

INSTANTIATE_TEST_SUITE_P(Hf, RopeScalingRates, ::testing::Values("llama_rope_llama3", "llama_rope_linear"));

TEST(HfRopeScaling, MapsTheConfiguration) {
  const ModelConfig llama3 = import_hf_without_vocabulary(folder("llama_rope_llama3")).config;
  EXPECT_EQ(llama3.rope_scaling, "llama3");
  EXPECT_EQ(llama3.rope_theta, 500000.0);
  EXPECT_EQ(llama3.rope_scaling_factor, 8.0);
  EXPECT_EQ(llama3.rope_low_freq_factor, 1.0);
  EXPECT_EQ(llama3.rope_high_freq_factor, 16.0);
  EXPECT_EQ(llama3.rope_original_max_positions, 256);
  const ModelConfig linear = import_hf_without_vocabulary(folder("llama_rope_linear")).config;
  EXPECT_EQ(linear.rope_scaling, "linear");
  EXPECT_EQ(linear.rope_scaling_factor, 2.0);
  EXPECT_EQ(linear.rope_original_max_positions, 0);
  EXPECT_EQ(import_hf_without_vocabulary(folder("llama")).config.rope_scaling, "none");
}

// A copy of a fixture folder with config.json changed by `edit`.
std::string edited(const std::string& name, const std::string& copy, const std::function<void(json&)>& edit) {
  const fs::path dir = testing::temp_path(copy);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(folder(name))) fs::copy(e.path(), dir / e.path().filename());
  json config = read_hf_json(dir / "config.json");
  edit(config);
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir.string();
}

void expect_same_rope(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.rope_scaling, b.rope_scaling);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.rope_scaling_factor, b.rope_scaling_factor);
  EXPECT_EQ(a.rope_low_freq_factor, b.rope_low_freq_factor);
  EXPECT_EQ(a.rope_high_freq_factor, b.rope_high_freq_factor);
  EXPECT_EQ(a.rope_original_max_positions, b.rope_original_max_positions);
}

// Earlier files: rope_scaling with "type" (or "rope_type") and rope_theta beside it.
TEST(HfRopeScaling, ReadsTheOlderRopeScalingForm) {
  for (const char* name : {"llama_rope_llama3", "llama_rope_linear"}) {
    const ModelConfig want = import_hf_without_vocabulary(folder(name)).config;
    for (const char* type_key : {"type", "rope_type"}) {
      const std::string dir = edited(name, cat(name, "_", type_key), [&](json& c) {
        json scaling = c["rope_parameters"];
        c.erase("rope_parameters");
        c["rope_theta"] = scaling["rope_theta"];
        scaling.erase("rope_theta");
        const json type = scaling["rope_type"];
        scaling.erase("rope_type");
        scaling[type_key] = type;
        c["rope_scaling"] = scaling;
      });
      expect_same_rope(import_hf_without_vocabulary(dir).config, want);
    }
  }
}

// config.json's own original_max_position_embeddings wins over the dictionary's, as in transformers;
// without either, max_position_embeddings.
TEST(HfRopeScaling, OriginalPositionsFromWhereTransformersTakesThem) {
  auto original = [](const std::string& copy, const std::function<void(json&)>& edit) {
    return import_hf_without_vocabulary(edited("llama_rope_llama3", copy, edit)).config.rope_original_max_positions;
  };
  EXPECT_EQ(original("rope_top", [](json& c) { c["original_max_position_embeddings"] = 512; }), 512);
  EXPECT_EQ(original("rope_none", [](json& c) { c["rope_parameters"].erase("original_max_position_embeddings"); }),
            2048);
}

void expect_refused(const std::function<void(json&)>& edit, std::initializer_list<const char*> words) {
  testing::expect_error([&] { import_hf_without_vocabulary(edited("llama_rope_llama3", "rope_refused", edit)); },
                        words);
}

TEST(HfRopeScaling, RefusesOtherTypesAndBadParameters) {
  for (const char* type : {"yarn", "dynamic", "longrope"}) {
    const std::string t = type;
    expect_refused([&](json& c) { c["rope_parameters"]["rope_type"] = t; }, {"rope_parameters", type, "not supported"});
  }
  expect_refused([](json& c) { c["rope_parameters"].erase("low_freq_factor"); },
                 {"rope_parameters", "llama3", "low_freq_factor"});
  expect_refused([](json& c) { c["rope_parameters"]["high_freq_factor"] = 1.0; },
                 {"high_freq_factor 1", "low_freq_factor 1"});
  expect_refused([](json& c) { c["rope_parameters"]["factor"] = 0; }, {"factor", "0", "positive"});
  expect_refused([](json& c) { c["rope_parameters"]["original_max_position_embeddings"] = -3; },
                 {"original_max_position_embeddings", "-3"});
}

// The model file records the scaling and loads with it; the configuration checks name the field.
TEST(HfRopeScaling, ModelFileRecordsTheScaling) {
  const ModelConfig c = import_hf_without_vocabulary(folder("llama_rope_llama3")).config;
  const std::string path = testing::temp_path("rope_llama3.safetensors");
  save_model(Transformer(c), path);
  expect_same_rope(load_model(path)->config(), c);
  ModelConfig bad = c;
  bad.rope_high_freq_factor = 0.5;
  testing::expect_error([&] { bad.validate(); }, {"rope_high_freq_factor", "0.5"});
  bad = c;
  bad.rope_scaling = "yarn";
  testing::expect_error([&] { bad.validate(); }, {"rope_scaling", "yarn"});
  bad = c;
  bad.rope_scaling = "linear";
  testing::expect_error([&] { bad.validate(); }, {"rope_original_max_positions", "256", "llama3"});
  bad = c;
  bad.rope_scaling = "none";
  testing::expect_error([&] { bad.validate(); }, {"rope_scaling_factor", "8"});
}

}  // namespace
}  // namespace tfm
