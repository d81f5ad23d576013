// Checkpoints: a saved and loaded model is bit-identical; saving is atomic; a malformed, truncated
// or bit-flipped file is rejected with an error that names the problem, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "io/atomic_file.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "testing/errors.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tfm-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path_), {})); }

 private:
  fs::path path_;
};

ModelConfig small_config() {
  ModelConfig c = model_preset("tiny");
  c.vocab_size = 9;
  c.d_model = 8;
  c.heads = 2;
  c.d_ff = 6;
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  return c;
}

using testing::error_of;

TEST(Checkpoint, SavedAndLoadedModelIsBitIdentical) {
  TempDir dir;
  for (bool pre_norm : {false, true}) {
    ModelConfig c = small_config();
    c.pre_norm = pre_norm;
    c.tie_source_target = !pre_norm;
    Transformer model(c);
    model.init_parameters(11);
    save_model(model, dir / "model.safetensors");
    const auto loaded = load_model(dir / "model.safetensors");
    EXPECT_EQ(loaded->config().pre_norm, pre_norm);
    ASSERT_EQ(loaded->params().values().bytes(), model.params().values().bytes());
    EXPECT_EQ(std::memcmp(loaded->params().values().raw(), model.params().values().raw(),
                          model.params().values().bytes()), 0);
    const Batch batch = make_batch({{4, 5, 6}, {7}}, {{8, 4}, {5, 6, 7}}, c);
    const Tensor a = model.forward(model.context(), batch, nullptr);
    const Tensor b = loaded->forward(loaded->context(), batch, nullptr);
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.bytes()), 0) << "outputs differ after a save and load";
  }
}

TEST(Checkpoint, ParameterCountFormulaMatchesTheModel) {
  for (const char* preset : {"tiny", "small", "base"}) {
    for (bool pre : {false, true}) {
      ModelConfig c = model_preset(preset);
      c.vocab_size = 1000;
      c.pre_norm = pre;
      c.tie_source_target = !pre;
      c.decoder_layers = 2;
      EXPECT_EQ(parameter_count(c), Transformer(c).params().parameter_count()) << preset << " pre_norm " << pre;
    }
  }
}

TEST(Checkpoint, SaveIsAtomic) {
  TempDir dir;
  const std::string path = dir / "file.bin";
  write_file_atomic(path, [](std::ostream& out) { out << "old contents"; });
  // A writer that fails halfway leaves the old file and no temporary behind.
  EXPECT_THROW(write_file_atomic(path,
                                 [](std::ostream& out) {
                                   out << "half of the new";
                                   throw Error("disk on fire");
                                 }),
               Error);
  EXPECT_EQ(read_file(path), "old contents");
  EXPECT_EQ(dir.entries(), 1u);
  // A folder that does not exist: a clear error naming the path.
  const std::string msg = error_of([&] { write_file_atomic(dir / "no/such/dir/x", [](std::ostream&) {}); });
  EXPECT_NE(msg.find("no/such/dir"), std::string::npos) << msg;
}

std::string valid_file_bytes(const TempDir& dir) {
  Transformer model(small_config());
  model.init_parameters(1);
  save_model(model, dir / "valid.safetensors");
  return read_file(dir / "valid.safetensors");
}

// Parses and loads bytes as a model; returns "" on success, the error message otherwise.
std::string try_load(const std::string& bytes) {
  return error_of([&] { load_model(SafetensorsFile::parse(bytes, "test"), DType::F32); });
}

TEST(Checkpoint, EveryTruncationIsRejected) {
  TempDir dir;
  const std::string bytes = valid_file_bytes(dir);
  ASSERT_EQ(try_load(bytes), "");
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string msg = try_load(bytes.substr(0, n));
    ASSERT_NE(msg, "") << "a file truncated to " << n << " of " << bytes.size() << " bytes was accepted";
  }
}

// read() takes the header from the file and each tensor's bytes when asked for them: the same
// checks as parse(), through the other path.
TEST(Checkpoint, TruncatedFilesOnDiskAreRejected) {
  TempDir dir;
  const std::string bytes = valid_file_bytes(dir);
  const std::string path = dir / "cut.safetensors";
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 16) {
    { std::ofstream(path, std::ios::binary) << bytes.substr(0, n); }
    ASSERT_NE(error_of([&] { load_model(path); }), "") << "a file cut to " << n << " of " << bytes.size()
                                                        << " bytes was accepted";
  }
}

TEST(Checkpoint, ReadFromDiskEqualsParsedFromMemory) {
  TempDir dir;
  const std::string bytes = valid_file_bytes(dir);
  const SafetensorsFile mem = SafetensorsFile::parse(bytes, "memory");
  const SafetensorsFile disk = SafetensorsFile::read(dir / "valid.safetensors");
  ASSERT_EQ(disk.names(), mem.names());
  EXPECT_EQ(disk.metadata(), mem.metadata());
  for (const std::string& n : mem.names()) {
    const Tensor a = mem.tensor(n), b = disk.tensor(n);
    ASSERT_EQ(a.bytes(), b.bytes()) << n;
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.bytes()), 0) << n;
  }
  // The file cut short after its header was read: the tensors past the cut name the problem.
  fs::resize_file(dir / "valid.safetensors", bytes.size() / 2);
  EXPECT_NE(error_of([&] { disk.tensor(mem.names().back()); }).find("truncated"), std::string::npos);
  EXPECT_NE(error_of([&] { SafetensorsFile::read(dir / "."); }).find("is a folder"), std::string::npos);
  EXPECT_NE(error_of([&] { SafetensorsFile::read(dir / "none.safetensors"); }).find("cannot open"), std::string::npos);
}

TEST(Checkpoint, BitFlipsAreRejectedOrHarmless) {
  TempDir dir;
  const std::string bytes = valid_file_bytes(dir);
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  std::mt19937_64 gen(7);
  int rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string b = bytes;
    // Half the flips in the header (where they matter), half anywhere.
    const size_t pos = i % 2 ? gen() % b.size() : gen() % (8 + header);
    b[pos] = static_cast<char>(b[pos] ^ (1 << (gen() % 8)));
    const std::string msg = try_load(b);  // must return, never crash
    if (!msg.empty()) ++rejected;
    // A flip inside the 8-byte length or the JSON's structure must never be accepted silently.
    if (pos < 8) {
      EXPECT_NE(msg, "") << "flip in the header length at byte " << pos << " accepted";
    }
  }
  EXPECT_GT(rejected, 500);
}

TEST(Checkpoint, OversizedAndImpossibleHeaderLengths) {
  TempDir dir;
  const std::string bytes = valid_file_bytes(dir);
  for (uint64_t n : {uint64_t{1} << 63, uint64_t{kMaxSafetensorsHeader} + 1, uint64_t{bytes.size()},
                     ~uint64_t{0}}) {
    std::string b = bytes;
    std::memcpy(b.data(), &n, 8);
    const std::string msg = try_load(b);
    EXPECT_NE(msg.find("header length"), std::string::npos) << n << ": " << msg;
  }
}

// Builds a safetensors buffer from a header object and raw data.
std::string craft(const nlohmann::json& header, const std::string& data) {
  const std::string text = header.dump();
  const uint64_t n = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + text + data;
}

TEST(Checkpoint, MalformedHeadersNameTheProblem) {
  using nlohmann::json;
  const std::string data(16, '\0');
  auto parse_error = [&](const json& header, const std::string& payload) {
    return error_of([&] { SafetensorsFile::parse(craft(header, payload), "crafted"); });
  };
  EXPECT_NE(error_of([&] { SafetensorsFile::parse(std::string(8, '\x05') + "{", "crafted"); }).find("header length"),
            std::string::npos);
  std::string not_json = craft(json::object(), "");
  not_json[8] = '[';
  EXPECT_NE(error_of([&] { SafetensorsFile::parse(not_json, "crafted"); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(parse_error({{"a", {{"dtype", "BF16"}, {"shape", {2}}, {"data_offsets", {0, 4}}}}}, data).find("BF16"),
            std::string::npos);
  EXPECT_NE(parse_error({{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 40}}}}}, data)
                .find("outside the data"),
            std::string::npos);
  EXPECT_NE(parse_error({{"a", {{"dtype", "F32"}, {"shape", {3}}, {"data_offsets", {0, 8}}}}}, data).find("need 12"),
            std::string::npos);
  EXPECT_NE(parse_error({{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
                         {"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {4, 12}}}}},
                        std::string(12, '\0'))
                .find("overlaps"),
            std::string::npos);
  EXPECT_NE(parse_error({{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {8, 16}}}}}, data).find("gap"),
            std::string::npos);
  EXPECT_NE(parse_error({{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}}}, data)
                .find("belong to no tensor"),
            std::string::npos);
  EXPECT_NE(parse_error({{"a", {{"dtype", "F32"}, {"shape", {-2}}, {"data_offsets", {0, 8}}}}}, data)
                .find("non-negative"),
            std::string::npos);
  EXPECT_NE(parse_error({{"a", {{"dtype", "F32"}, {"shape", {1u << 31, 1u << 31, 1u << 31}}, {"data_offsets", {0, 8}}}}},
                        data)
                .find("larger than"),
            std::string::npos);
  EXPECT_NE(parse_error({{"__metadata__", {{"k", 3}}}}, "").find("must be a string"), std::string::npos);
}

TEST(Checkpoint, ModelLevelChecks) {
  TempDir dir;
  const SafetensorsFile valid = SafetensorsFile::parse(valid_file_bytes(dir), "valid");
  std::vector<NamedTensor> tensors;
  for (const std::string& n : valid.names()) tensors.push_back({n, valid.tensor(n)});
  std::map<std::string, std::string> meta = valid.metadata();

  auto load_with = [&](const std::map<std::string, std::string>& m, const std::vector<NamedTensor>& t) {
    write_safetensors(dir / "x.safetensors", m, t);
    return error_of([&] { load_model(dir / "x.safetensors"); });
  };
  EXPECT_EQ(load_with(meta, tensors), "");

  auto m2 = meta;
  m2.erase("format");
  EXPECT_NE(load_with(m2, tensors).find("not a model file"), std::string::npos);
  m2 = meta;
  m2["config"] = "{\"d_model\": 8, \"heads\": 3}";
  EXPECT_NE(load_with(m2, tensors).find("not divisible"), std::string::npos);
  m2["config"] = "{\"d_model\": 8, \"colour\": 3}";
  EXPECT_NE(load_with(m2, tensors).find("unknown model config field 'colour'"), std::string::npos);
  m2["config"] = "{\"d_model\": ";
  EXPECT_NE(load_with(m2, tensors).find("not valid JSON"), std::string::npos);

  auto t2 = tensors;
  for (NamedTensor& nt : t2)  // same number of values, transposed shape
    if (nt.name == "encoder.layers.0.ffn.fc1.weight") nt.tensor = Tensor::zeros({nt.tensor.size(1), nt.tensor.size(0)});
  EXPECT_NE(load_with(meta, t2).find("has shape [8, 6] but the configuration needs [6, 8]"), std::string::npos);
  t2 = tensors;
  t2.pop_back();
  EXPECT_NE(load_with(meta, t2).find("parameter values but its configuration needs"), std::string::npos);
  t2 = tensors;
  t2.push_back({"optimizer.m", Tensor::zeros({5})});  // training state: skipped by load_model
  EXPECT_EQ(load_with(meta, t2), "");
  t2.back().name = "stray";
  EXPECT_NE(load_with(meta, t2), "");
  // The path is in the message of a file that does not exist.
  EXPECT_NE(error_of([&] { load_model(dir / "missing.safetensors"); }).find("missing.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace tfm
