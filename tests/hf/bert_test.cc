// Hugging Face BERT imports against Hugging Face itself: tools/make_hf_bert_fixtures.py saved a
// random BertModel, a BertForMaskedLM and a sentence-transformers folder, with the last hidden
// states, masked-LM logits and encode() embeddings transformers and sentence-transformers computed
// (tests/fixtures/hf/*/reference.json). The importer's configuration and tensors build the model
// here; then refusals of what it cannot compute, each naming the field and its value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.h"
#include "decode/embedding.h"
#include "import/hf_common.h"
#include "io/atomic_file.h"
#include "io/safetensors.h"
#include "model/transformer.h"
#include "testing/errors.h"
#include "testing/fixture.h"

namespace tfm {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using transformer::EmbedOptions;
using transformer::Pooling;

const fs::path kDir = fs::path(TFM_FIXTURE_DIR) / "hf";

json reference(const std::string& which) { return json::parse(read_file((kDir / which / "reference.json").string())); }

// What import_hf does before the tokenizer: the folder's config.json, the BERT importer, and a
// sentence-transformers folder's modules.
ImportedModel import_folder(const fs::path& dir) {
  HfFolderInfo f;
  f.dir = dir;
  if (fs::exists(dir / "modules.json")) {
    f.sentence_transformers = dir;
    f.dir = sentence_transformers_model_dir(dir);
  }
  f.config_path = f.dir / "config.json";
  f.config = read_hf_json(f.config_path);
  f.architecture = f.config["architectures"][0].get<std::string>();
  f.model_type = f.config["model_type"].get<std::string>();
  ImportedModel m = import_hf_bert(f);
  if (!f.sentence_transformers.empty()) apply_sentence_transformers(f.sentence_transformers, m);
  return m;
}

// The model the import describes, its parameters the imported tensors.
std::unique_ptr<Transformer> build(const ImportedModel& m) {
  auto model = std::make_unique<Transformer>(m.config);
  for (const NamedTensor& t : m.tensors) {
    const int id = model->params().find(t.name);
    EXPECT_GE(id, 0) << t.name;
    if (id >= 0) model->params().value(id).copy_from(t.tensor);
  }
  EXPECT_EQ(static_cast<int>(m.tensors.size()), model->params().size());
  return model;
}

// The reference's padded batch as this model's input.
Batch padded_batch(const json& r) {
  const auto ids = r["batch_ids"].get<std::vector<std::vector<int32_t>>>();
  const auto B = static_cast<int64_t>(ids.size()), S = static_cast<int64_t>(ids[0].size());
  Batch b;
  b.src = Tensor::empty({B, S}, DType::I32);
  b.src_lengths = Tensor::empty({B}, DType::I32);
  for (int64_t i = 0; i < B; ++i) {
    std::copy(ids[i].begin(), ids[i].end(), b.src.data<int32_t>() + i * S);
    int32_t n = 0;
    for (int v : r["batch_mask"][i].get<std::vector<int>>()) n += v;
    b.src_lengths.data<int32_t>()[i] = n;
  }
  return b;
}

// The largest difference between `got` [B, S, N] (each sentence's first rows) and the reference's
// per-sentence [L, N] arrays.
double worst_difference(const Tensor& got, const json& want) {
  const int64_t S = got.size(1), N = got.size(2);
  const std::vector<double> v = got.to_doubles();
  double worst = 0;
  for (size_t b = 0; b < want.size(); ++b)
    for (size_t t = 0; t < want[b].size(); ++t)
      for (int64_t n = 0; n < N; ++n)
        worst = std::max(worst, std::abs(v[(b * S + t) * N + n] - want[b][t][n].get<double>()));
  return worst;
}

// A copy of a fixture folder, edited.
fs::path edited(const std::string& which, const std::string& name, const std::function<void(const fs::path&)>& edit) {
  const fs::path dir = testing::temp_path("hf-bert-" + name);
  fs::remove_all(dir);
  fs::copy(kDir / which, dir, fs::copy_options::recursive);
  edit(dir);
  return dir;
}

void rewrite(const fs::path& path, const std::function<void(json&)>& edit) {
  json j = json::parse(read_file(path.string()));
  edit(j);
  std::ofstream(path) << j.dump();
}

TEST(HfBert, SpecialIdsAreTheTokenizersClsAndSep) {
  const json r = reference("bert");
  const ImportedModel m = import_folder(kDir / "bert");
  EXPECT_EQ(m.config.architecture, "encoder-only");
  EXPECT_EQ(m.config.bos_id, r["ids"][0].front().get<int32_t>());  // [CLS]
  EXPECT_EQ(m.config.eos_id, r["ids"][0].back().get<int32_t>());   // [SEP]
  EXPECT_EQ(m.config.pad_id, r["batch_ids"].back().back().get<int32_t>());
  // A folder with BERT's vocab.txt (one piece a line) instead of tokenizer.json: the same ids.
  const fs::path dir = testing::temp_path("hf-bert-vocab-txt");
  fs::remove_all(dir);
  fs::copy(kDir / "bert", dir);
  const json vocab = json::parse(read_file((dir / "tokenizer.json").string()))["model"]["vocab"];
  std::vector<std::string> pieces(vocab.size());
  for (const auto& [piece, id] : vocab.items()) pieces.at(id.get<size_t>()) = piece;
  fs::remove(dir / "tokenizer.json");
  std::ofstream txt(dir / "vocab.txt");
  for (const std::string& p : pieces) txt << p << "\n";
  txt.close();
  const ImportedModel from_txt = import_folder(dir);
  EXPECT_EQ(from_txt.config.bos_id, m.config.bos_id);
  EXPECT_EQ(from_txt.config.eos_id, m.config.eos_id);
  EXPECT_EQ(from_txt.config.unk_id, m.config.unk_id);
}

TEST(HfBert, LastHiddenStatesMatchHuggingFace) {
  for (const char* which : {"bert", "bert-mlm"}) {
    const json r = reference(which);
    const auto model = build(import_folder(kDir / which));
    const Batch b = padded_batch(r);
    const Tensor hidden = model->encode(model->context(), b.src, b.src_lengths, nullptr);
    EXPECT_LT(worst_difference(hidden, r["hidden"]), 1e-4) << which;
  }
}

// Pretraining checkpoints' names: "bert." before the encoder's tensors, LayerNorm's gamma and beta.
TEST(HfBert, OlderTensorNamesImportAlike) {
  const fs::path dir = edited("bert", "older-names", [](const fs::path& d) {
    const SafetensorsFile f = SafetensorsFile::read((d / "model.safetensors").string());
    std::vector<NamedTensor> renamed;
    for (std::string n : f.names()) {
      const Tensor t = f.tensor(n);
      for (const auto& [now, old] :
           {std::pair{"LayerNorm.weight", "LayerNorm.gamma"}, {"LayerNorm.bias", "LayerNorm.beta"}})
        if (n.ends_with(now)) n = n.substr(0, n.size() - std::string(now).size()) + old;
      renamed.push_back({"bert." + n, t});
    }
    write_safetensors((d / "model.safetensors").string(), {}, renamed);
  });
  const json r = reference("bert");
  const auto model = build(import_folder(dir));
  const Batch b = padded_batch(r);
  EXPECT_LT(worst_difference(model->encode(model->context(), b.src, b.src_lengths, nullptr), r["hidden"]), 1e-4);
}

TEST(HfBert, MaskedLmLogitsMatchHuggingFace) {
  const json r = reference("bert-mlm");
  const ImportedModel m = import_folder(kDir / "bert-mlm");
  EXPECT_TRUE(m.config.mlm_head);
  const auto model = build(m);
  const Tensor logits = model->forward(model->context(), padded_batch(r), nullptr);
  EXPECT_LT(worst_difference(logits, r["logits"]), 1e-4);
}

std::vector<std::vector<int32_t>> sentence_ids(const json& r) {
  return r["ids"].get<std::vector<std::vector<int32_t>>>();
}

void expect_embeddings(const std::vector<transformer::Embedding>& got, const json& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].values.size(), want[i].size()) << what;
    for (size_t d = 0; d < want[i].size(); ++d)
      worst = std::max(worst, std::abs(got[i].values[d] - want[i][d].get<double>()));
  }
  EXPECT_LT(worst, 1e-5) << what;
}

TEST(HfBert, EmbeddingsMatchSentenceTransformersWithEachPooling) {
  const json r = reference("minilm");
  const auto model = build(import_folder(kDir / "minilm"));
  const auto ids = sentence_ids(r);
  for (const auto& [name, pooling] : {std::pair{"cls", Pooling::kCls}, {"mean", Pooling::kMean},
                                      {"max", Pooling::kMax}, {"lasttoken", Pooling::kLast}})
    for (const bool normalize : {false, true}) {
      EmbedOptions o;
      o.pooling = pooling;
      o.normalize = normalize;
      o.batch_sentences = 3;  // a padded batch and one alone
      const std::string key = cat(name, normalize ? "_normalized" : "");
      expect_embeddings(embed_ids(*model, ids, {}, o), r["embeddings"][key], key);
    }
}

TEST(HfBert, SentenceTransformersModulesSetEmbedsDefaults) {
  const json r = reference("minilm");
  const auto ids = sentence_ids(r);
  const ImportedModel saved = import_folder(kDir / "minilm");  // Pooling mean, then Normalize
  EXPECT_EQ(saved.config.pooling, "mean");
  EXPECT_TRUE(saved.config.normalize_embeddings);
  expect_embeddings(embed_ids(*build(saved), ids, {}, {}), r["embeddings"]["mean_normalized"], "the folder's");
  // The older flags of 1_Pooling/config.json, and no Normalize module.
  const fs::path older = edited("minilm", "older", [](const fs::path& d) {
    rewrite(d / "1_Pooling" / "config.json", [](json& j) {
      j = {{"word_embedding_dimension", 32}, {"pooling_mode_cls_token", false}, {"pooling_mode_max_tokens", true}};
    });
    rewrite(d / "modules.json", [](json& j) { j.erase(2); });
  });
  const ImportedModel max = import_folder(older);
  EXPECT_EQ(max.config.pooling, "max");
  EXPECT_FALSE(max.config.normalize_embeddings);
  expect_embeddings(embed_ids(*build(max), ids, {}, {}), r["embeddings"]["max"], "older flags");
}

TEST(HfBert, WhatItCannotComputeIsRefusedNamingIt) {
  auto config = [](const std::string& name, const char* key, const json& value) {
    return edited("bert", name,
                  [&](const fs::path& d) { rewrite(d / "config.json", [&](json& j) { j[key] = value; }); });
  };
  testing::expect_error([&] { import_folder(config("relative", "position_embedding_type", "relative_key")); },
                        {"'position_embedding_type' \"relative_key\" is not supported"});
  testing::expect_error([&] { import_folder(config("act", "hidden_act", "quick_gelu")); },
                        {"hidden_act 'quick_gelu' is not supported"});
  testing::expect_error([&] { import_folder(config("decoder", "is_decoder", true)); }, {"'is_decoder' true"});
  testing::expect_error([&] { import_folder(config("layers", "num_hidden_layers", 1)); },
                        {"tensor 'encoder.layer.1.", "is not part of the model"});
  const auto modules = [](const std::string& name, const std::function<void(json&)>& edit) {
    return edited("minilm", name, [&](const fs::path& d) { rewrite(d / "modules.json", edit); });
  };
  testing::expect_error(
      [&] {
        import_folder(modules("dense", [](json& j) {
          const json dense = {{"idx", 2}, {"path", "2_Dense"}, {"type", "sentence_transformers.models.Dense"}};
          j.insert(j.begin() + 2, dense);
        }));
      },
      {"module 2 of type 'sentence_transformers.models.Dense' is not supported"});
  const auto pooling = [](const std::string& name, const json& mode) {
    return edited("minilm", name, [&](const fs::path& d) {
      rewrite(d / "1_Pooling" / "config.json", [&](json& j) { j["pooling_mode"] = mode; });
    });
  };
  testing::expect_error([&] { import_folder(pooling("weighted", "weightedmean")); },
                        {"pooling mode 'weightedmean' is not supported"});
  testing::expect_error([&] { import_folder(pooling("two", json::array({"cls", "mean"}))); },
                        {"2 pooling modes are set"});
}

}  // namespace
}  // namespace tfm
