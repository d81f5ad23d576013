// Hugging Face M2M-100 and NLLB-200 translators (M2M100ForConditionalGeneration) imported and run
// against transformers' own outputs: tiny random models with an NllbTokenizer and an
// M2M100Tokenizer, written with tools/make_hf_m2m100_fixtures.py, whose m2m100_reference.json holds
// the tokenizers' ids, teacher-forced logits and generate() outputs. Then what is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "core/error.h"
#include "import/import.h"
#include "io/atomic_file.h"
#include "model/batch.h"
#include "model/checkpoint.h"
#include "testing/errors.h"
#include "testing/fixture.h"
#include "transformer/translator.h"

namespace tfm {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kDir = fs::path(TFM_FIXTURE_DIR) / "hf";
constexpr int32_t kEos = 2;
constexpr int64_t kMaxNewTokens = 12;  // generate()'s, the forced language token and </s> included

const json& reference() {
  static const json r = json::parse(read_file((kDir / "m2m100_reference.json").string()));
  return r;
}

// Imports a fixture folder once per process; returns the model file.
std::string imported(const std::string& which) {
  static std::map<std::string, std::string> done;
  if (!done.count(which)) {
    const std::string dir = testing::temp_path("m2m100-" + which);
    fs::remove_all(dir);
    done[which] = write_imported(import_hf((kDir / which).string()), dir);
  }
  return done[which];
}

transformer::TranslateOptions options(const json& ref, int64_t beam) {
  transformer::TranslateOptions o;
  o.search.beam_size = beam;
  o.search.length_penalty = 1.0;
  o.search.length_normalization = transformer::SearchOptions::LengthNormalization::kPower;
  o.search.beam_stop = transformer::SearchOptions::BeamStop::kNoBetterLive;
  o.search.max_length_a = 0;
  o.search.max_length_b = kMaxNewTokens;
  o.search.limit_without_eos = true;  // as generate() stops at max_new_tokens
  o.languages = {ref["source_lang"].get<std::string>(), ref["target_lang"].get<std::string>()};
  return o;
}

// generate()'s ids after the decoder's start, as a hypothesis here holds them: without </s>. Sets
// `complete` when it ended with </s> (else it stopped at max_new_tokens).
std::vector<int32_t> expected_ids(const json& hyp, bool& complete) {
  std::vector<int32_t> ids = hyp["ids"].get<std::vector<int32_t>>();
  ids.erase(ids.begin());
  complete = ids.back() == kEos;
  if (complete) ids.pop_back();
  return ids;
}

class M2M100 : public ::testing::TestWithParam<std::string> {
 protected:
  const json& ref() const { return reference()[GetParam()]; }
};

TEST_P(M2M100, LogitsMatchTransformers) {
  // transformers' float32 logits against this model's float64 ones.
  const auto model = load_model(imported(GetParam()), DType::F64);
  for (const json& c : ref()["logits"]) {
    std::vector<int32_t> src = ref()["source_ids"][c["sentence"].get<size_t>()].get<std::vector<int32_t>>();
    ASSERT_EQ(src.back(), kEos);
    src.pop_back();  // the model appends </s>
    std::vector<int32_t> tgt = c["decoder_input_ids"].get<std::vector<int32_t>>();
    ASSERT_EQ(tgt.front(), model->config().bos_id);
    tgt.erase(tgt.begin());  // the batch puts the decoder's start
    const std::vector<double> got = model->forward(model->context(), make_batch({src}, {tgt}, model->config()), nullptr)
                                        .to_doubles();
    const int64_t V = model->config().vocab_size;
    const json& want = c["logits"];
    ASSERT_EQ(static_cast<int64_t>(got.size()), static_cast<int64_t>(want.size()) * V);
    double worst = 0;
    for (size_t t = 0; t < want.size(); ++t)
      for (int64_t v = 0; v < V; ++v) worst = std::max(worst, std::abs(got[t * V + v] - want[t][v].get<double>()));
    EXPECT_LT(worst, 1e-4) << GetParam();
  }
}

TEST_P(M2M100, TokenIdsAreTheTokenizers) {
  // Multi30k test lines in four languages and awkward Unicode, without the special tokens.
  const transformer::Translator t(imported(GetParam()));
  for (const json& line : ref()["tokenized"])
    EXPECT_EQ(t.encode(line["text"].get<std::string>()), line["ids"].get<std::vector<int32_t>>()) << line["text"];
  // With the source language: [code] tokens </s>, as the tokenizer with src_lang set.
  const transformer::LanguageOptions languages{ref()["source_lang"], ref()["target_lang"]};
  for (size_t i = 0; i < ref()["sources"].size(); ++i) {
    std::vector<int32_t> want = ref()["source_ids"][i].get<std::vector<int32_t>>();
    want.pop_back();
    EXPECT_EQ(t.encode_source(ref()["sources"][i].get<std::string>(), languages), want) << i;
  }
}

// Every sentence, those that stop at max_new_tokens included (SearchOptions::limit_without_eos).
TEST_P(M2M100, GreedyAndBeamMatchGenerate) {
  const transformer::Translator t(imported(GetParam()));
  int64_t at_limit = 0;
  const std::vector<std::string> sources = ref()["sources"].get<std::vector<std::string>>();
  for (const auto& [key, beam] : {std::pair{"greedy", 1}, {"beam4", 4}}) {
    const auto out = t.translate(sources, options(ref(), beam));
    for (size_t i = 0; i < sources.size(); ++i) {
      const json& hf = ref()[key][i];
      std::vector<int32_t> source = ref()["source_ids"][i].get<std::vector<int32_t>>();
      source.pop_back();
      EXPECT_EQ(out[i].source_ids, source) << key << " sentence " << i;
      bool complete = false;
      EXPECT_EQ(out[i].best().ids, expected_ids(hf, complete)) << key << " sentence " << i;
      at_limit += !complete;
      EXPECT_EQ(out[i].best().ids.front(), ref()["target_lang_id"].get<int32_t>());
      // The text leaves out the language token (M2M100Tokenizer's decode keeps its __de__).
      EXPECT_EQ(out[i].best().text, hf["text_after_language"].get<std::string>()) << key << " " << i;
    }
  }
  EXPECT_GT(at_limit, 0) << "no output reaches the limit: the fixture no longer tests it";
}

TEST_P(M2M100, IdsAreTakenAsGivenAndTheTargetLanguageForced) {
  const transformer::Translator t(imported(GetParam()));
  std::vector<std::vector<int32_t>> sources;
  for (const json& ids : ref()["source_ids"]) {
    sources.push_back(ids.get<std::vector<int32_t>>());
    sources.back().pop_back();
  }
  transformer::TranslateOptions o = options(ref(), 1);
  o.languages.source.clear();
  const auto out = t.translate_ids(sources, o);
  for (size_t i = 0; i < sources.size(); ++i) {
    bool complete = false;
    EXPECT_EQ(out[i].source_ids, sources[i]);
    EXPECT_EQ(out[i].best().ids, expected_ids(ref()["greedy"][i], complete)) << i;
  }
  testing::expect_error([&] { t.translate_ids(sources, options(ref(), 1)); },
                        {"source language", "does not apply to token ids"});
}

TEST_P(M2M100, LanguagesAreRefusedNamingTheValue) {
  const transformer::Translator t(imported(GetParam()));
  transformer::TranslateOptions o = options(ref(), 1);
  o.languages.target = "xx_Yyyy";
  testing::expect_error([&] { t.translate({"A man."}, o); },
                        {"unknown target language 'xx_Yyyy'", ref()["target_lang"].get<std::string>().c_str()});
  o.languages.target.clear();
  testing::expect_error([&] { t.translate({"A man."}, o); }, {"give the target language"});
  testing::expect_error([&] { t.translate_ids({{25, 72}}, o); }, {"give the target language"});
  o = options(ref(), 1);
  o.languages.source.clear();
  testing::expect_error([&] { t.translate({"A man."}, o); }, {"give the source language"});
}

INSTANTIATE_TEST_SUITE_P(Hf, M2M100, ::testing::Values("nllb", "m2m100"));

TEST(M2M100Languages, AModelWithoutLanguageCodesRefusesThem) {
  const std::string dir = testing::temp_path("m2m100-marian");
  fs::remove_all(dir);
  const transformer::Translator t(write_imported(import_hf((fs::path(TFM_FIXTURE_DIR) / "import" / "hf").string()), dir));
  transformer::TranslateOptions o;
  o.languages.target = "de";
  testing::expect_error([&] { t.translate({"a"}, o); }, {"no language codes", "target language 'de'"});
}

// A copy of a fixture folder with one file edited, to import from.
std::string edited(const std::string& which, const char* file, const std::function<void(json&)>& edit) {
  const fs::path dir = testing::temp_path(cat("m2m100-bad-", which));
  fs::remove_all(dir);
  fs::copy(kDir / which, dir);
  json j = json::parse(read_file((dir / file).string()));
  edit(j);
  std::ofstream(dir / file) << j.dump();
  return dir.string();
}

TEST(M2M100Import, UnsupportedValuesAreRefusedNamingThem) {
  const auto refused = [](const std::string& dir, std::initializer_list<const char*> parts) {
    testing::expect_error([&] { import_hf(dir); }, parts);
  };
  refused(edited("nllb", "config.json", [](json& c) { c["activation_function"] = "tanh"; }),
          {"activation_function 'tanh'", "config.json"});
  refused(edited("nllb", "config.json", [](json& c) { c["decoder_ffn_dim"] = 128; }), {"'decoder_ffn_dim' is 128"});
  refused(edited("nllb", "config.json", [](json& c) { c["encoder_layerdrop"] = 1.5; }), {"encoder_layerdrop", "1.5"});
  refused(edited("nllb", "config.json", [](json& c) { c["decoder_layers"] = 3; }),
          {"model.decoder.layers.2", "model.safetensors"});
  refused(edited("nllb", "config.json", [](json& c) { c["pad_token_id"] = 0; }),
          {"pad_token is id 1 but config.json's pad_token_id is 0"});
  refused(edited("nllb", "tokenizer_config.json", [](json& c) { c["legacy_behaviour"] = true; }),
          {"legacy_behaviour"});
  refused(edited("m2m100", "tokenizer_config.json", [](json& c) { c["language_codes"] = "m2m200"; }),
          {"language_codes 'm2m200'"});
  refused(edited("m2m100", "config.json", [](json& c) { c["vocab_size"] = 500; }),
          {"has 509 ids but config.json's vocab_size is 500"});
}

TEST(M2M100Import, ScaleEmbeddingIsHonoured) {
  // The fixtures differ in it (the NLLB one scales by √D, the M2M-100 one does not); turned the
  // other way the logits change, so the flag is read, not assumed.
  for (const char* which : {"nllb", "m2m100"}) {
    const std::string dir = edited(which, "config.json", [](json& c) { c["scale_embedding"] = !c["scale_embedding"].get<bool>(); });
    const ImportedModel m = import_hf(dir);
    EXPECT_EQ(m.config.scale_embeddings, std::string(which) == "m2m100") << which;
  }
}

}  // namespace
}  // namespace tfm
