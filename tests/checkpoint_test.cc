// Checkpoints: a saved and loaded model is bit-identical; saving is atomic; a malformed, truncated
// or bit-flipped file is rejected with an error that names the problem, never a crash; the checksum
// catches every flip of header or data; NaN and infinite weights are refused naming the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "io/atomic_file.h"
#include "io/checksum.h"
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
using testing::expect_error;

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


// The header's length n and where the data starts (8 + n).
uint64_t data_start(const std::string& bytes) {
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return 8 + n;
}

std::string flipped(std::string bytes, size_t pos, int bit) {
  bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << bit));
  return bytes;
}

// The lowest bit of a weight's byte: the value changes slightly and stays finite, which nothing but
// a checksum can notice.
TEST(Checkpoint, FlipsInTheTensorDataAreCaughtByTheChecksum) {
  TempDir dir;
  const std::string bytes = valid_file_bytes(dir);
  const size_t begin = data_start(bytes), end = bytes.size();
  for (size_t pos : {begin, begin + 1, (begin + end) / 2, end - 2, end - 1}) {
    expect_error([&] { load_model(SafetensorsFile::parse(flipped(bytes, pos, 0), "flipped.safetensors")); },
                 {"flipped.safetensors: checksum mismatch: the file records xxh3-64:", "but its contents hash to xxh3-64:"});
    // The same through a file on disk, which is read one tensor at a time.
    { std::ofstream(dir / "flipped.safetensors", std::ios::binary) << flipped(bytes, pos, 0); }
    expect_error([&] { load_model(dir / "flipped.safetensors"); }, {"flipped.safetensors: checksum mismatch"});
  }
}

// Every byte of the header is covered: its length, the JSON (metadata, tensor entries, padding) and
// the checksum's own digits. One bit per byte, a different one from byte to byte.
TEST(Checkpoint, AFlipInAnyByteOfTheHeaderIsRejected) {
  TempDir dir;
  const std::string bytes = valid_file_bytes(dir);
  for (size_t pos = 0; pos < data_start(bytes); ++pos) {
    const int bit = static_cast<int>(pos % 8);
    ASSERT_NE(try_load(flipped(bytes, pos, bit)), "") << "a flip of bit " << bit << " of header byte " << pos
                                                      << " was accepted";
  }
}

// The checksum is XXH3-64 of the whole file with its own 16 digits read as '0's
// (docs/checkpoint-format.md): computed here independently of the reader.
TEST(Checkpoint, TheChecksumIsXxh3OfTheFileWithItsDigitsAsZeros) {
  TempDir dir;
  std::string bytes = valid_file_bytes(dir);
  const SafetensorsFile file = SafetensorsFile::parse(bytes, "valid");
  ASSERT_TRUE(file.has_checksum());
  const std::string recorded = file.metadata().at(kChecksumKey);
  const size_t at = bytes.find(recorded);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at + kChecksumPrefix.size(), kChecksumDigits, std::string(kChecksumDigits, '0'));
  EXPECT_EQ(format_checksum(checksum_of(bytes)), recorded);
  EXPECT_EQ(file.metadata().at("format_version"), "2");
  EXPECT_EQ(parse_checksum("xxh3-64:00000000000000ff", "x"), 255u);
  expect_error([] { parse_checksum("xxh3-64:00000000000000FF", "m"); }, {"m: ", "'F' is not a lowercase hex digit"});
  expect_error([] { parse_checksum("crc32:1234", "m"); }, {"'crc32:1234' is not a checksum of the form xxh3-64:"});
}

TEST(Checkpoint, VerificationCanBeSkipped) {
  TempDir dir;
  const std::string bytes = valid_file_bytes(dir);
  const std::string bad = flipped(bytes, bytes.size() - 1, 0);
  EXPECT_NE(error_of([&] { load_model(SafetensorsFile::parse(bad, "m"), DType::F32, Checksums::kVerify); }), "");
  EXPECT_EQ(error_of([&] { load_model(SafetensorsFile::parse(bad, "m"), DType::F32, Checksums::kSkip); }), "");
  const SafetensorsFile file = SafetensorsFile::parse(bytes, "m");
  EXPECT_TRUE(file.read_tensors([](const std::string&) { return nullptr; }, true));
  EXPECT_FALSE(file.read_tensors([](const std::string&) { return nullptr; }, false));
}

// A model file as version 1 wrote it: no checksum in the metadata.
std::string version1_bytes(const std::string& valid) {
  const SafetensorsFile file = SafetensorsFile::parse(valid, "valid");
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::map<std::string, std::string> meta = file.metadata();
  meta.erase(kChecksumKey);
  meta["format_version"] = "1";
  header["__metadata__"] = meta;
  std::string data;
  for (const std::string& n : file.names()) {
    const Tensor t = file.tensor(n);
    header[n] = {{"dtype", "F32"}, {"shape", t.shape().to_vector()}, {"data_offsets", {data.size(), data.size() + t.bytes()}}};
    data.append(static_cast<const char*>(t.raw()), t.bytes());
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t n = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + text + data;
}

TEST(Checkpoint, FilesWithoutAChecksumLoadUnverified) {
  TempDir dir;
  const std::string old = version1_bytes(valid_file_bytes(dir));
  const SafetensorsFile file = SafetensorsFile::parse(old, "old");
  EXPECT_FALSE(file.has_checksum());
  EXPECT_EQ(error_of([&] { load_model(file); }), "");
  EXPECT_FALSE(file.read_tensors([](const std::string&) { return nullptr; }, true));
  // The committed fixture was written by version 1.
  const std::string fixture = std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors";
  EXPECT_FALSE(SafetensorsFile::read(fixture).has_checksum());
  EXPECT_EQ(error_of([&] { load_model(fixture); }), "");
  // Version 2 requires its checksum: a file that lost it (its key damaged, say) is refused.
  std::string v2 = old;
  const size_t at = v2.find("\"format_version\":\"1\"");
  ASSERT_NE(at, std::string::npos);
  v2[at + std::strlen("\"format_version\":\"")] = '2';
  expect_error([&] { load_model(SafetensorsFile::parse(v2, "lost")); },
               {"lost: model format version 2 records a checksum, but this file has no 'checksum'"});
}

// A weight set to `value` after training (a diverged run, a bad conversion): the file is written
// with a valid checksum, and loading refuses it naming the tensor and the index.
std::string with_weight(const TempDir& dir, const std::string& name, int64_t index, float value) {
  Transformer model(small_config());
  model.init_parameters(1);
  const ParamStore& p = model.params();
  p.value(p.find(name)).data<float>()[index] = value;
  save_model(model, dir / "weights.safetensors");
  return dir / "weights.safetensors";
}

TEST(Checkpoint, NonFiniteWeightsAreRefusedNamingTheTensor) {
  TempDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  expect_error([&] { load_model(with_weight(dir, "encoder.layers.0.ffn.fc1.weight", 13, nan)); },
               {"weights.safetensors: tensor 'encoder.layers.0.ffn.fc1.weight' holds NaN at index 13 ([1, 5]) of its 48 "
                "values"});
  expect_error([&] { load_model(with_weight(dir, "decoder.layers.0.cross_attn.q_proj.bias", 0, inf)); },
               {"tensor 'decoder.layers.0.cross_attn.q_proj.bias' holds +Inf at index 0 of its 8 values"});
  expect_error([&] { load_model(with_weight(dir, "embed.weight", 71, -inf)); },
               {"tensor 'embed.weight' holds -Inf at index 71 ([8, 7])"});
  // Whatever the path: skipping the checksum, from memory, into a float64 model, one tensor alone.
  const std::string path = with_weight(dir, "decoder.layers.0.ffn_norm.weight", 7, nan);
  for (auto load : std::vector<std::function<void()>>{
           [&] { load_model(path, DType::F32, Checksums::kSkip); },
           [&] { load_model(SafetensorsFile::parse(read_file(path), "memory"), DType::F32); },
           [&] { load_model(path, DType::F64); },
           [&] { SafetensorsFile::read(path).tensor("decoder.layers.0.ffn_norm.weight"); }})
    expect_error(load, {"tensor 'decoder.layers.0.ffn_norm.weight' holds NaN at index 7"});
  // A NaN that damage put into a file with a checksum: the mismatch is what is reported.
  std::string damaged = valid_file_bytes(dir);
  const float nan_value = nan;
  std::memcpy(damaged.data() + data_start(damaged) + 4 * 3, &nan_value, 4);
  expect_error([&] { load_model(SafetensorsFile::parse(damaged, "damaged")); }, {"damaged: checksum mismatch"});
  expect_error([&] { load_model(SafetensorsFile::parse(damaged, "damaged"), DType::F32, Checksums::kSkip); },
               {"damaged: tensor '", "' holds NaN at index 3"});
  // float64 tensors too.
  write_safetensors(dir / "f64.safetensors", {},
                    {{"t", Tensor::from<double>({2, 2}, {0.0, 1.0, -std::numeric_limits<double>::infinity(), 2.0})}});
  expect_error([&] { SafetensorsFile::read(dir / "f64.safetensors").tensor("t"); },
               {"tensor 't' holds -Inf at index 2 ([1, 0])"});
}

}  // namespace
}  // namespace tfm
