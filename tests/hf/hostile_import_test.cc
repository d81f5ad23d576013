// Hugging Face folders broken as downloads and hand edits break them: each case copies a fixture
// folder (tests/fixtures/hf) into a temporary folder, breaks one thing, and expects a tfm::Error
// naming the file, the field and the value, before any allocation the broken value asks for.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "data/hf_tokenizer.h"
#include "data/unicode_text.h"
#include "import/hf_common.h"
#include "io/atomic_file.h"
#include "testing/errors.h"
#include "testing/fixture.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::expect_error;

fs::path fixture(const std::string& name) { return fs::path(TFM_FIXTURE_DIR) / "hf" / name; }

// A copy of a fixture folder for one case to break.
fs::path copy_of(const std::string& name, const std::string& case_name) {
  const fs::path dir = testing::temp_path("hostile_" + case_name);
  fs::remove_all(dir);
  fs::copy(fixture(name), dir, fs::copy_options::recursive);
  return dir;
}

void edit_json(const fs::path& path, const std::function<void(json&)>& edit) {
  json j = read_hf_json(path);
  edit(j);
  std::ofstream(path) << j.dump(1);
}

// A safetensors file as its header (a JSON object) and its data, to edit and write back.
struct RawSafetensors {
  json header;
  std::string data;
};

RawSafetensors read_raw(const fs::path& path) {
  const std::string bytes = read_file(path.string());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return {json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

void write_raw(const fs::path& path, const RawSafetensors& raw) {
  const std::string text = raw.header.dump();
  const uint64_t n = text.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << text << raw.data;
}

// Appends a tensor of `dtype` and `shape` holding zero bytes (`bytes` of them).
void add_tensor(const fs::path& path, const std::string& name, const std::string& dtype, const json& shape,
                size_t bytes) {
  RawSafetensors raw = read_raw(path);
  raw.header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {raw.data.size(), raw.data.size() + bytes}}};
  raw.data.append(bytes, '\0');
  write_raw(path, raw);
}

std::string output_folder(const std::string& case_name) {
  const std::string out = testing::temp_path("hostile_out_" + case_name);
  fs::remove_all(out);
  return out;
}

// A vocab_size or intermediate_size of another model: refused by comparing the sizes with the
// converted weights, before the model the configuration describes is allocated (10 million rows
// of the embedding would be gigabytes), and no output folder is made.
TEST(HfHostileImport, SizesOfAnotherModelAreRefusedBeforeAllocatingIt) {
  const fs::path vocab = copy_of("llama", "vocab_size");
  edit_json(vocab / "config.json", [](json& c) { c["vocab_size"] = 10'000'000; });
  const std::string out = output_folder("vocab_size");
  expect_error([&] { write_imported(import_hf(vocab.string()), out); },
               {"vocab_size 10000000", "parameter values", "[280, 24]"});
  EXPECT_FALSE(fs::exists(out));
  const fs::path ffn = copy_of("llama", "intermediate_size");
  edit_json(ffn / "config.json", [](json& c) { c["intermediate_size"] = 1'000'000; });
  expect_error([&] { write_imported(import_hf(ffn.string()), out); }, {"d_ff 1000000", "parameter values"});
  EXPECT_FALSE(fs::exists(out));
}

// M2M-100's vocabulary is filled up to vocab_size: an absurd one is refused by the embedding's
// shape first, not filled.
TEST(HfHostileImport, M2M100VocabSizeBeyondTheEmbeddingIsRefusedBeforeFillingTheVocabulary) {
  for (const int64_t size : {int64_t{1'000'000'000'000}, int64_t{9'000'000}}) {
    const fs::path dir = copy_of("m2m100", "m2m100_vocab_size");
    edit_json(dir / "config.json", [&](json& c) { c["vocab_size"] = size; });
    expect_error([&] { import_hf_without_vocabulary(dir.string()); },
                 {"model.safetensors", cat("vocab_size is ", size).c_str(), "[517, 32]"});
  }
}

// An id far past the vocabulary in the tokenizer's table is refused before a table that long is made.
TEST(HfHostileImport, TokenizerIdsBeyondTheModelAreRefusedBeforeATableOfThemIsMade) {
  const fs::path m2m = copy_of("m2m100", "m2m100_vocab_id");
  edit_json(m2m / "vocab.json", [](json& v) { v["zzz"] = 2'000'000'000; });
  expect_error([&] { import_hf_without_vocabulary(m2m.string()); }, {"vocab.json", "'zzz'", "2000000000", "517"});
  const fs::path llama = copy_of("llama", "tokenizer_id");
  edit_json(llama / "tokenizer.json", [](json& t) { t["model"]["vocab"]["zzz"] = 2'000'000'000; });
  expect_error([&] { import_hf(llama.string()); }, {"tokenizer.json", "'zzz' has id 2000000000", "280 ids"});
}

// Older checkpoints keep BERT's position_ids as an int64 buffer beside the weights: passed over as
// the importer accounts for it. A weight stored as integers is refused, naming it and its dtype.
TEST(HfHostileImport, IntegerBuffersArePassedOverAndIntegerWeightsRefused) {
  const fs::path dir = copy_of("bert", "int64_buffer");
  add_tensor(dir / "model.safetensors", "embeddings.position_ids", "I64", {1, 64}, 64 * 8);
  const ImportedModel with = import_hf_without_vocabulary(dir.string());
  EXPECT_EQ(with.tensors.size(), import_hf_without_vocabulary(fixture("bert").string()).tensors.size());
  add_tensor(dir / "model.safetensors", "embeddings.mask", "BOOL", {4}, 4);
  expect_error([&] { import_hf_without_vocabulary(dir.string()); }, {"embeddings.mask", "not part of the model"});
  const fs::path weights = copy_of("bert", "int_weight");
  RawSafetensors raw = read_raw(weights / "model.safetensors");
  raw.header["embeddings.word_embeddings.weight"]["dtype"] = "I32";  // the same 4 bytes a value
  write_raw(weights / "model.safetensors", raw);
  expect_error([&] { import_hf_without_vocabulary(weights.string()); }, {"embeddings.word_embeddings.weight", "int32"});
}

// A gated feed-forward's halves of different widths (one saved transposed), or a flattened Conv1D
// weight, are refused naming them.
TEST(HfHostileImport, TransposedWeightIsRefusedNamingIt) {
  const fs::path dir = copy_of("llama", "transposed");
  RawSafetensors raw = read_raw(dir / "model.safetensors");
  json& shape = raw.header["model.layers.0.mlp.up_proj.weight"]["shape"];
  shape = {shape[1], shape[0]};
  write_raw(dir / "model.safetensors", raw);
  expect_error([&] { import_hf_without_vocabulary(dir.string()); },
               {"model.safetensors", "model.layers.0.mlp.gate_proj", "[24, 48]"});
  const fs::path gpt2 = copy_of("gpt2", "flat");
  raw = read_raw(gpt2 / "model.safetensors");
  json& conv = raw.header["transformer.h.0.mlp.c_fc.weight"]["shape"];
  conv = {conv[0].get<int64_t>() * conv[1].get<int64_t>()};
  write_raw(gpt2 / "model.safetensors", raw);
  expect_error([&] { import_hf_without_vocabulary(gpt2.string()); },
               {"model.safetensors", "'transformer.h.0.mlp.c_fc.weight' has shape [2304], not a matrix"});
}

// BERT's vocab.txt saved with Windows line ends has the same pieces (Python reads "\r\n" as "\n").
TEST(HfHostileImport, VocabTxtWithWindowsLineEndsHasTheSamePieces) {
  const json vocab = read_hf_json(fixture("bert") / "tokenizer.json")["model"]["vocab"];
  std::vector<std::string> pieces(vocab.size());
  for (const auto& [piece, id] : vocab.items()) pieces[id.get<size_t>()] = piece;
  std::string lf, crlf;
  for (const std::string& p : pieces) lf += p + "\n", crlf += p + "\r\n";
  const auto newline = HfTokenizer::from_wordpiece_vocab(lf, true, std::nullopt, true, "lf/vocab.txt");
  const auto windows = HfTokenizer::from_wordpiece_vocab(crlf, true, std::nullopt, true, "crlf/vocab.txt");
  const std::string text = "A man in a blue shirt is standing on a ladder.";
  EXPECT_EQ(windows.encode(text, true), newline.encode(text, true));
  EXPECT_EQ(windows.size(), newline.size());
}

// ModelConfig's checks of what config.json describes name config.json; grouped-query heads that do
// not divide the heads (or none) are refused naming num_key_value_heads; so is a quantized
// checkpoint's quantization_config (its weights would be missing under their float names).
TEST(HfHostileImport, RefusedConfigurationsNameConfigJsonAndTheValue) {
  for (const int kv : {0, 3, -2}) {
    const fs::path dir = copy_of("llama", "kv_heads");
    edit_json(dir / "config.json", [&](json& c) { c["num_key_value_heads"] = kv; });
    expect_error([&] { import_hf_without_vocabulary(dir.string()); },
                 {"config.json", cat("num_key_value_heads ", kv).c_str()});
  }
  const fs::path quantized = copy_of("llama", "quantized");
  edit_json(quantized / "config.json", [](json& c) { c["quantization_config"] = {{"quant_method", "gptq"}}; });
  expect_error([&] { import_hf_without_vocabulary(quantized.string()); },
               {"config.json", "quantization_config", "gptq", "not read"});
  const fs::path gpt2 = copy_of("gpt2", "n_head");
  edit_json(gpt2 / "config.json", [](json& c) { c["n_head"] = 5; });
  expect_error([&] { import_hf_without_vocabulary(gpt2.string()); }, {"config.json", "heads 5"});
  const fs::path bert = copy_of("bert", "hidden_size");
  edit_json(bert / "config.json", [](json& c) { c["hidden_size"] = -32; });
  expect_error([&] { import_hf_without_vocabulary(bert.string()); }, {"config.json", "-32"});
}

// A sharded index naming a shard that is not there, or one outside the folder, or nothing.
TEST(HfHostileImport, BrokenShardIndexesNameTheIndexAndTheShard) {
  const auto index_with = [](const std::string& case_name, const std::function<void(json&)>& edit) {
    const fs::path dir = copy_of("llama_sharded", case_name);
    edit_json(dir / "model.safetensors.index.json", edit);
    return dir.string();
  };
  const auto shard_of_lm_head = [](const std::string& shard) {
    return [shard](json& j) { j["weight_map"]["lm_head.weight"] = shard; };
  };
  const std::string missing = index_with("missing", shard_of_lm_head("gone.safetensors"));
  expect_error([&] { import_hf_without_vocabulary(missing); },
               {"model.safetensors.index.json", "lm_head.weight", "gone.safetensors"});
  const std::string outside = index_with("outside", shard_of_lm_head("../x.safetensors"));
  expect_error([&] { import_hf_without_vocabulary(outside); },
               {"model.safetensors.index.json", "../x.safetensors", "not a file name in the folder"});
  const std::string empty = index_with("empty", [](json& j) { j["weight_map"] = json::object(); });
  expect_error([&] { import_hf_without_vocabulary(empty); }, {"model.safetensors.index.json", "lists no tensors"});
}

// A post-processor adding an id beyond the vocabulary names tokenizer.json and the id.
TEST(HfHostileImport, PostProcessorIdBeyondTheVocabularyNamesTheTokenizer) {
  const fs::path dir = copy_of("llama", "post_processor");
  edit_json(dir / "tokenizer.json", [](json& t) { t["post_processor"]["special_tokens"]["<s>"]["ids"] = {99999}; });
  expect_error([&] { import_hf(dir.string()); }, {"tokenizer.json", "post_processor", "99999", "vocab_size 280"});
}

// An empty tokenizer.json (an interrupted download) is said to be one.
TEST(HfHostileImport, EmptyTokenizerJsonIsSaidToBeEmpty) {
  const fs::path dir = copy_of("llama", "empty_tokenizer");
  std::ofstream(dir / "tokenizer.json", std::ios::trunc).flush();
  expect_error([&] { import_hf(dir.string()); }, {"tokenizer.json", "is empty"});
}

// A pre-tokenizer's pattern that backtracks without end on a text stops with an error naming it
// (tokenizers' Oniguruma, as ICU without a limit, would search for years).
TEST(HfHostileImport, CatastrophicBacktrackingPatternStopsNamingIt) {
  const unicode::Regex regex("(a|aa)+$", "'t/tokenizer.json': pre_tokenizer.pattern");
  expect_error([&] { regex.find_all(std::string(60, 'a') + "b"); },
               {"'t/tokenizer.json': pre_tokenizer.pattern", "(a|aa)+$", "did not finish"});
}

// A NaN among the weights is refused naming the tensor (the checkpoint reader's check).
TEST(HfHostileImport, NonFiniteWeightIsRefusedNamingTheTensor) {
  const fs::path dir = copy_of("llama", "nan");
  RawSafetensors raw = read_raw(dir / "model.safetensors");
  const uint64_t at = raw.header["model.norm.weight"]["data_offsets"][0].get<uint64_t>();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(raw.data.data() + at, &nan, 4);
  write_raw(dir / "model.safetensors", raw);
  expect_error([&] { import_hf_without_vocabulary(dir.string()); }, {"model.norm.weight", "NaN"});
}

}  // namespace
}  // namespace tfm
