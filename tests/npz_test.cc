// NumPy .npz archives (io/npz.h), as NumPy and Marian write them: archives made here with libzip
// (stored and deflated, .npy versions 1.0, 2.0 and 3.0), two written by NumPy itself, one laid out
// byte for byte as Marian's cnpy writes it; then damaged and hostile ones, each of which must throw
// a tfm::Error naming the file and the problem, never crash, and never allocate what the archive
// only claims to hold.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zip.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "io/npz.h"
#include "testing/errors.h"
#include "testing/fixture.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::expect_error;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A new file each time: on ext4, truncating a file that was just written flushes it to disk first
// (auto_da_alloc), which made the tests that write hundreds of archives take seconds.
void write_all(const std::string& path, const std::string& bytes) {
  fs::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// The header dict as NumPy writes it.
std::string dict(const std::string& descr, const std::string& shape, const char* fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

// A .npy file: the magic, version `major`.0, the header length, the dict padded with spaces to a
// multiple of 64 bytes and ended by a newline, then the data.
std::string npy(const std::string& header_dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = header_dict;
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const auto n = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += static_cast<char>(n >> (8 * i) & 0xff);
  return out + header + data;
}

struct Member {
  std::string name;  // in the archive, ".npy" included
  std::string bytes;
  int32_t method = ZIP_CM_STORE;
};

// Writes the members into a zip archive at `path` with libzip.
void write_zip(const std::string& path, const std::vector<Member>& members, const char* password = nullptr) {
  int code = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  ASSERT_NE(z, nullptr) << "zip_open " << path << ": " << code;
  for (const Member& m : members) {
    zip_source_t* src = zip_source_buffer(z, m.bytes.data(), m.bytes.size(), 0);
    ASSERT_NE(src, nullptr);
    const zip_int64_t i = zip_file_add(z, m.name.c_str(), src, ZIP_FL_ENC_UTF_8);
    ASSERT_GE(i, 0) << zip_strerror(z);
    ASSERT_EQ(zip_set_file_compression(z, static_cast<zip_uint64_t>(i), m.method, 0), 0) << zip_strerror(z);
    if (password) {
      ASSERT_EQ(zip_file_set_encryption(z, static_cast<zip_uint64_t>(i), ZIP_EM_AES_256, password), 0)
          << zip_strerror(z);
    }
  }
  ASSERT_EQ(zip_close(z), 0) << zip_strerror(z);
}

// The compression method of an archive's entry, as written (so that "deflated" is really tested).
int method_of(const std::string& path, const std::string& name) {
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, nullptr);
  if (!z) return -1;
  zip_stat_t st;
  const int method = zip_stat(z, name.c_str(), 0, &st) == 0 ? st.comp_method : -1;
  zip_discard(z);
  return method;
}

// Opens the archive and reads every array, as an importer would; returns the error or "".
std::string open_and_read(const std::string& path) {
  return error_of([&] {
    NpzFile f(path);
    for (const NpyArray& a : f.arrays()) {
      if (a.dtype.substr(1) == "f4" || a.dtype.substr(1) == "f2" || a.dtype.substr(1) == "f8") {
        f.read_f32(a.name);
      } else {
        f.read_bytes(a.name);
      }
    }
  });
}

// One member "x.npy" holding `npy_bytes`; the error of opening and reading it.
std::string error_of_npy(const std::string& npy_bytes, int32_t method = ZIP_CM_STORE) {
  const std::string path = testing::temp_path("one.npz");
  write_zip(path, {{"x.npy", npy_bytes, method}});
  const std::string what = open_and_read(path);
  fs::remove(path);
  return what;
}

void expect_npy_error(const std::string& npy_bytes, std::initializer_list<const char*> parts) {
  const std::string what = error_of_npy(npy_bytes);
  ASSERT_FALSE(what.empty()) << "no tfm::Error thrown";
  EXPECT_NE(what.find("one.npz: array 'x'"), std::string::npos) << what;
  for (const char* p : parts) EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
}

// float16 bit patterns and their exact values.
const std::vector<uint16_t> kHalfBits = {0x3c00, 0xc000, 0x3555, 0x7bff, 0x0001,
                                         0x03ff, 0x0400, 0x8000, 0x7c00, 0xfc00};
const std::vector<float> kHalfValues = {1.0f,       -2.0f,    0.333251953125f, 65504.0f, 0x1p-24f,
                                        0x3ffp-24f, 0x1p-14f, -0.0f,           INFINITY, -INFINITY};

std::vector<float> iota_f32(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale - 1.0f;
  return v;
}

// A small archive of every kind read here: f4 2×3, f8, f2, u1 and i1 bytes, a scalar, a 3-d array,
// an empty one; `major` the .npy version, `method` stored or deflated.
std::vector<Member> every_kind(int major, int32_t method) {
  const std::vector<double> f8 = {0.5, -1e30, 1e-40, 3.0};
  return {
      {"w.npy", npy(dict("<f4", "(2, 3)"), bytes_of(iota_f32(6, 0.5f)), major), method},
      {"d.npy", npy(dict("<f8", "(4,)"), bytes_of(f8), major), method},
      {"h.npy", npy(dict("<f2", "(10,)"), bytes_of(kHalfBits), major), method},
      {"special:model.yml.npy", npy(dict("|i1", "(6,)"), std::string("a: 1\n\0", 6), major), method},
      {"u.npy", npy(dict("|u1", "(3,)"), "\x01\xff\x80", major), method},
      {"s.npy", npy(dict("<f4", "()"), bytes_of(std::vector<float>{7.5f}), major), method},
      {"cube.npy", npy(dict("<f4", "(2, 2, 2)"), bytes_of(iota_f32(8, 1.0f)), major), method},
      {"empty.npy", npy(dict("<f4", "(0, 3)"), "", major), method},
  };
}

TEST(Npz, ReadsStoredAndDeflatedArchivesOfEveryVersion) {
  for (const int major : {1, 2, 3}) {
    for (const int32_t method : {ZIP_CM_STORE, ZIP_CM_DEFLATE}) {
      SCOPED_TRACE(::testing::Message() << "version " << major << ".0, method " << method);
      const std::string path = testing::temp_path("every_kind.npz");
      write_zip(path, every_kind(major, method));
      ASSERT_EQ(method_of(path, "w.npy"), method);
      const NpzFile f(path);
      ASSERT_EQ(f.arrays().size(), 8u);
      const std::vector<std::string> names = {"w", "d", "h", "special:model.yml", "u", "s", "cube", "empty"};
      for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(f.arrays()[i].name, names[i]);

      EXPECT_EQ(f.array("w").dtype, "<f4");
      EXPECT_EQ(f.array("w").shape, (std::vector<int64_t>{2, 3}));
      EXPECT_EQ(f.read_f32("w"), iota_f32(6, 0.5f));
      EXPECT_EQ(f.array("cube").shape, (std::vector<int64_t>{2, 2, 2}));
      EXPECT_EQ(f.read_f32("cube"), iota_f32(8, 1.0f));
      EXPECT_EQ(f.array("s").shape, std::vector<int64_t>{});
      EXPECT_EQ(f.array("s").numel(), 1);
      EXPECT_EQ(f.read_f32("s"), std::vector<float>{7.5f});
      EXPECT_EQ(f.array("empty").numel(), 0);
      EXPECT_TRUE(f.read_f32("empty").empty());

      EXPECT_EQ(f.read_f32("d"), (std::vector<float>{0.5f, -1e30f, static_cast<float>(1e-40), 3.0f}));
      const std::vector<float> h = f.read_f32("h");
      ASSERT_EQ(h.size(), kHalfValues.size());
      for (size_t i = 0; i < h.size(); ++i)
        EXPECT_EQ(std::bit_cast<uint32_t>(h[i]), std::bit_cast<uint32_t>(kHalfValues[i])) << "half " << i;

      EXPECT_EQ(f.read_bytes("special:model.yml"), std::string("a: 1\n\0", 6));
      EXPECT_EQ(f.read_bytes("u"), "\x01\xff\x80");
      EXPECT_TRUE(f.has("u"));
      EXPECT_FALSE(f.has("u.npy"));
      fs::remove(path);
    }
  }
}

TEST(Npz, HalfNaNStaysNaN) {
  const std::string path = testing::temp_path("nan.npz");
  write_zip(path, {{"n.npy", npy(dict("<f2", "(2,)"), bytes_of(std::vector<uint16_t>{0x7e00, 0xfe01}))}});
  const std::vector<float> v = NpzFile(path).read_f32("n");
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]));
  fs::remove(path);
}

TEST(Npz, ReadsALargeDeflatedArrayThatGrowsAsItArrives) {
  // 16 MiB of float zeros deflate to a few KiB: the values are reserved in part, then grow.
  const std::string path = testing::temp_path("zeros.npz");
  std::vector<float> zeros(size_t{4} << 20, 0.0f);
  zeros.back() = 2.0f;
  write_zip(path, {{"z.npy", npy(dict("<f4", "(1024, 4096)"), bytes_of(zeros)), ZIP_CM_DEFLATE}});
  EXPECT_LT(fs::file_size(path), 1u << 20);
  EXPECT_EQ(NpzFile(path).read_f32("z"), zeros);
  fs::remove(path);
}

// Written by NumPy 2.4 (numpy.savez and numpy.savez_compressed): zip64 local headers, a "|i1" array.
//   a = float32 [[1.5, -2, 3], [4, 5, 6.25]]; half = float16 [1, -2, 0.5, 65504];
//   "special:model.yml" = int8 bytes of "type: transformer\n\0"
std::string unhex(const char* hex) {
  std::string out;
  for (size_t i = 0; hex[i] && hex[i + 1]; i += 2)
    out += static_cast<char>(std::stoi(std::string(hex + i, 2), nullptr, 16));
  return out;
}
const char* kNumpySavez =
    "504b03042d0000000000000021005bfec51affffffffffffffff05001400612e6e7079010010009800000000000000980000000000000093"
    "4e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065"
    "273a2028322c2033292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020"
    "20202020202020202020202020200a0000c03f000000c000004040000080400000a0400000c840504b03042d000000000000002100b71fac"
    "33ffffffffffffffff0800140068616c662e6e70790100100088000000000000008800000000000000934e554d5059010076007b27646573"
    "6372273a20273c6632272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028342c292c207d20202020"
    "2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020"
    "0a003c00c00038ff7b504b03042d0000000000000021005b63d08bffffffffffffffff150014007370656369616c3a6d6f64656c2e796d6c"
    "2e6e70790100100093000000000000009300000000000000934e554d5059010076007b276465736372273a20277c6931272c2027666f7274"
    "72616e5f6f72646572273a2046616c73652c20277368617065273a202831392c292c207d2020202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020202020202020202020202020200a747970653a207472616e73666f726d65"
    "720a00504b01022d032d0000000000000021005bfec51a9800000098000000050000000000000000000000800100000000612e6e7079504b"
    "01022d032d000000000000002100b71fac3388000000880000000800000000000000000000008001cf00000068616c662e6e7079504b0102"
    "2d032d0000000000000021005b63d08b93000000930000001500000000000000000000008001910100007370656369616c3a6d6f64656c2e"
    "796d6c2e6e7079504b05060000000003000300ac0000006b0200000000";
const char* kNumpySavezCompressed =
    "504b03042d0000000800000021005bfec51affffffffffffffff05001400612e6e70790100100098000000000000005a000000000000009b"
    "ec17ea1b10c9c850c650ad9e925a9c5ca46ea5a06e9366a2aea3a09e965f54529498179f5f94920a12774bcc294e058a17672416a402f91a"
    "463a0ac69a3a0ab50a64032e068603f60c408281c1c18181a101881700f1090700504b03042d000000080000002100b71fac33ffffffffff"
    "ffffff0800140068616c662e6e70790100100088000000000000004c000000000000009bec17ea1b10c9c850c650ad9e925a9c5ca46ea5a0"
    "6e9366a4aea3a09e965f54529498179f5f94920a12774bcc294e058a17672416a402f91a263a9a3a0ab50a14002e061b86030c16ffab0150"
    "4b03042d0000000800000021005b63d08bffffffffffffffff150014007370656369616c3a6d6f64656c2e796d6c2e6e7079010010009300"
    "00000000000055000000000000009bec17ea1b10c9c850c650ad9e925a9c5ca46ea5a05e9369a8aea3a09e965f54529498179f5f94920a12"
    "774bcc294e058a17672416a402f91a86963a9a3a0ab50ae403ae92ca82542b059035c540eb72538bb81800504b01022d032d000000080000"
    "0021005bfec51a5a00000098000000050000000000000000000000800100000000612e6e7079504b01022d032d000000080000002100b71f"
    "ac334c0000008800000008000000000000000000000080019100000068616c662e6e7079504b01022d032d0000000800000021005b63d08b"
    "55000000930000001500000000000000000000008001170100007370656369616c3a6d6f64656c2e796d6c2e6e7079504b05060000000003"
    "000300ac000000b30100000000";

TEST(Npz, ReadsArchivesWrittenByNumPy) {
  for (const char* hex : {kNumpySavez, kNumpySavezCompressed}) {
    const std::string path = testing::temp_path("numpy.npz");
    write_all(path, unhex(hex));
    const NpzFile f(path);
    ASSERT_EQ(f.arrays().size(), 3u);
    EXPECT_EQ(f.array("a").shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(f.read_f32("a"), (std::vector<float>{1.5f, -2, 3, 4, 5, 6.25f}));
    EXPECT_EQ(f.array("half").dtype, "<f2");
    EXPECT_EQ(f.read_f32("half"), (std::vector<float>{1, -2, 0.5f, 65504}));
    EXPECT_EQ(f.array("special:model.yml").dtype, "|i1");
    EXPECT_EQ(f.array("special:model.yml").shape, std::vector<int64_t>{19});
    EXPECT_EQ(f.read_bytes("special:model.yml"), std::string("type: transformer\n\0", 19));
    fs::remove(path);
  }
}

// CRC-32 (zip's polynomial), bit by bit: for the cnpy-style archive below.
uint32_t crc32_of(const std::string& s) {
  uint32_t c = 0xffffffffu;
  for (const char ch : s) {
    c ^= static_cast<unsigned char>(ch);
    for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
  }
  return ~c;
}

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>(v >> (8 * i) & 0xff);
}

// An archive laid out as Marian's cnpy::npz_save writes it: stored entries, "version needed" 20,
// no dates, the .npy header padded to 16 bytes, its dtype "<i1" for the configuration's text.
std::string cnpy_npz(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string body, central;
  for (const auto& [name, npy_bytes] : items) {
    const std::string fname = name + ".npy";
    std::string local = "PK\x03\x04";
    put(local, 20, 2);
    put(local, 0, 2);
    put(local, 0, 2);
    put(local, 0, 4);
    put(local, crc32_of(npy_bytes), 4);
    put(local, npy_bytes.size(), 4);
    put(local, npy_bytes.size(), 4);
    put(local, fname.size(), 2);
    put(local, 0, 2);
    local += fname;
    std::string g = "PK\x01\x02";
    put(g, 20, 2);
    g += local.substr(4, 26);
    put(g, 0, 2);
    put(g, 0, 2);
    put(g, 0, 2);
    put(g, 0, 4);
    put(g, body.size(), 4);
    g += fname;
    central += g;
    body += local + npy_bytes;
  }
  std::string footer = "PK\x05\x06";
  put(footer, 0, 2);
  put(footer, 0, 2);
  put(footer, items.size(), 2);
  put(footer, items.size(), 2);
  put(footer, central.size(), 4);
  put(footer, body.size(), 4);
  put(footer, 0, 2);
  return body + central + footer;
}

// cnpy's .npy header: "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", padded with
// spaces so that the 10-byte prefix and the dict fill a multiple of 16 bytes, the last a newline.
std::string cnpy_npy(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string d = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  d.append(16 - (10 + d.size()) % 16, ' ');
  d.back() = '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  put(out, d.size(), 2);
  return out + d + data;
}

TEST(Npz, ReadsAnArchiveLaidOutAsMarianWritesIt) {
  const std::string yml = "type: transformer\ndim-emb: 512\n";
  const std::string text(yml.c_str(), yml.size() + 1);  // NUL-terminated, as Marian stores it
  const std::vector<float> w = iota_f32(12, 0.25f);
  const std::string path = testing::temp_path("marian.npz");
  write_all(path, cnpy_npz({{"Wemb", cnpy_npy("<f4", "4, 3", bytes_of(w))},
                            {"encoder_l1_self_Wq", cnpy_npy("<f4", "3,", bytes_of(iota_f32(3, 2.0f)))},
                            {"special:model.yml", cnpy_npy("<i1", std::to_string(text.size()) + ",", text)}}));
  const NpzFile f(path);
  ASSERT_EQ(f.arrays().size(), 3u);
  EXPECT_EQ(f.array("Wemb").shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(f.read_f32("Wemb"), w);
  EXPECT_EQ(f.array("encoder_l1_self_Wq").shape, std::vector<int64_t>{3});
  EXPECT_EQ(f.read_f32("encoder_l1_self_Wq"), iota_f32(3, 2.0f));
  EXPECT_EQ(f.array("special:model.yml").dtype, "<i1");
  EXPECT_EQ(f.read_bytes("special:model.yml"), text);
  fs::remove(path);
}

TEST(Npz, WrongUseNamesTheArrayAndTheDtype) {
  const std::string path = testing::temp_path("use.npz");
  write_zip(path, every_kind(1, ZIP_CM_STORE));
  const NpzFile f(path);
  expect_error([&] { f.array("nope"); }, {"use.npz", "no array named 'nope'", "8 arrays"});
  expect_error([&] { f.read_f32("nope"); }, {"no array named 'nope'"});
  expect_error([&] { f.read_f32("u"); }, {"use.npz", "array 'u' has dtype '|u1', not a float"});
  expect_error([&] { f.read_bytes("w"); }, {"array 'w' has dtype '<f4', not one of 1 byte"});
  fs::remove(path);
  const std::string i4 = testing::temp_path("i4.npz");
  write_zip(i4, {{"i.npy", npy(dict("<i4", "(2,)"), bytes_of(std::vector<int32_t>{1, 2}))}});
  expect_error([&] { NpzFile(i4).read_f32("i"); }, {"array 'i' has dtype '<i4', not a float"});
  fs::remove(i4);
}

TEST(Npz, DoubleBeyondFloatRangeThrowsNamingItsIndex) {
  const std::string path = testing::temp_path("big.npz");
  write_zip(path, {{"d.npy", npy(dict("<f8", "(3,)"), bytes_of(std::vector<double>{1.0, 2.0, 1e300}))}});
  expect_error([&] { NpzFile(path).read_f32("d"); }, {"array 'd' holds 1e+300 at index 2, beyond float32's range"});
  fs::remove(path);
}

TEST(Npz, FilesThatAreNotArchives) {
  expect_error([] { NpzFile f(testing::temp_path("missing.npz")); }, {"missing.npz", "no such file"});
  const std::string dir = testing::temp_path("folder.npz");
  fs::create_directories(dir);
  expect_error([&] { NpzFile f(dir); }, {"folder.npz' is a folder"});
  fs::remove(dir);
  const std::string path = testing::temp_path("text.npz");
  write_all(path, "type: transformer\n");
  expect_error([&] { NpzFile f(path); }, {"text.npz: not a zip archive"});
  write_all(path, "");
  expect_error([&] { NpzFile f(path); }, {"text.npz: the file is empty"});
  fs::remove(path);
}

// Every prefix of an archive (stored, then deflated) throws: the zip's directory is at its end.
TEST(Npz, EveryTruncationThrows) {
  for (const int32_t method : {ZIP_CM_STORE, ZIP_CM_DEFLATE}) {
    const std::string full = testing::temp_path("full.npz"), cut = testing::temp_path("cut.npz");
    write_zip(full, {{"w.npy", npy(dict("<f4", "(2, 3)"), bytes_of(iota_f32(6, 0.5f))), method},
                     {"special:model.yml.npy", npy(dict("|i1", "(5,)"), std::string("a: 1\0", 5)), method}});
    const std::string bytes = read_all(full);
    ASSERT_GT(bytes.size(), 200u);
    for (size_t n = 0; n < bytes.size(); ++n) {
      write_all(cut, bytes.substr(0, n));
      const std::string what = open_and_read(cut);
      ASSERT_FALSE(what.empty()) << "method " << method << ": no error for the first " << n << " of " << bytes.size()
                                 << " bytes";
      EXPECT_NE(what.find(cut), std::string::npos) << what;
      EXPECT_TRUE(what.find("not a zip archive") != std::string::npos ||
                  what.find("the file is empty") != std::string::npos || what.find("inconsistent") != std::string::npos)
          << "truncated to " << n << ": " << what;
    }
    fs::remove(full);
    fs::remove(cut);
  }
}

// Every byte of an archive flipped in turn: the archive throws naming the file, or (a byte no
// reader looks at: a time, a "version made by") reads exactly as before. Never anything else.
TEST(Npz, EveryFlippedByteThrowsOrChangesNothing) {
  for (const int32_t method : {ZIP_CM_STORE, ZIP_CM_DEFLATE}) {
    const std::string full = testing::temp_path("full.npz"), bad = testing::temp_path("flipped.npz");
    write_zip(full, {{"w.npy", npy(dict("<f4", "(2, 3)"), bytes_of(iota_f32(6, 0.5f))), method},
                     {"b.npy", npy(dict("|u1", "(5,)"), "hello"), method}});
    const std::string bytes = read_all(full);
    size_t thrown = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      std::string flipped = bytes;
      flipped[i] = static_cast<char>(flipped[i] ^ 0xff);
      write_all(bad, flipped);
      std::vector<float> w;
      std::string b;
      std::vector<NpyArray> arrays;
      const std::string what = error_of([&] {
        const NpzFile f(bad);
        arrays = f.arrays();
        w = f.read_f32("w");
        b = f.read_bytes("b");
      });
      if (!what.empty()) {
        ++thrown;
        EXPECT_NE(what.find(bad), std::string::npos) << what;
        continue;
      }
      ASSERT_EQ(arrays.size(), 2u) << "byte " << i;
      EXPECT_EQ(arrays[0].shape, (std::vector<int64_t>{2, 3})) << "byte " << i;
      EXPECT_EQ(w, iota_f32(6, 0.5f)) << "byte " << i;
      EXPECT_EQ(b, "hello") << "byte " << i;
    }
    EXPECT_GT(thrown, bytes.size() / 2) << "method " << method;
    fs::remove(full);
    fs::remove(bad);
  }
}

TEST(Npz, DamagedDataFailsItsCrc) {
  const std::vector<float> w = iota_f32(64, 0.5f);
  const std::string path = testing::temp_path("crc.npz");
  write_zip(path, {{"w.npy", npy(dict("<f4", "(64,)"), bytes_of(w))}});
  std::string bytes = read_all(path);
  const size_t at = bytes.find(bytes_of(w));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 100] = static_cast<char>(bytes[at + 100] ^ 0x01);  // one bit of one value
  write_all(path, bytes);
  const NpzFile f(path);  // the header is intact: the damage shows when the data is read
  expect_error([&] { f.read_f32("w"); }, {"crc.npz: array 'w'", "CRC-32 mismatch"});
  fs::remove(path);
}

TEST(Npz, MalformedNpyHeadersAreRefused) {
  const std::string f4x6 = bytes_of(iota_f32(6, 1.0f));
  std::string magic = npy(dict("<f4", "(6,)"), f4x6);
  magic[5] = 'Z';
  expect_npy_error(magic, {"bad magic", "NUMPZ"});
  expect_npy_error("", {"the entry is 0 bytes, too short for a .npy file"});
  expect_npy_error(std::string("\x93NUMPY\x01\x00\x00", 9), {"the entry is 9 bytes, too short"});
  std::string v4 = npy(dict("<f4", "(6,)"), f4x6);
  v4[6] = 4;
  expect_npy_error(v4, {"version 4.0 is not supported"});
  expect_npy_error(npy(dict("<f4", "(2, 3)", "True"), f4x6), {"fortran_order is True"});
  expect_npy_error(npy(dict(">f4", "(6,)"), f4x6), {"dtype '>f4' is big-endian"});
  expect_npy_error(npy(dict("|O", "(6,)"), f4x6), {"dtype '|O' is not supported"});
  expect_npy_error(npy(dict("<U6", "(1,)"), std::string(24, 'a')), {"dtype '<U6' is not supported"});
  expect_npy_error(npy(dict("|f4", "(6,)"), f4x6), {"dtype '|f4' has no byte order"});
  expect_npy_error(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", f4x6),
                   {"structured dtypes are not supported"});
  expect_npy_error(npy(dict("<f4", "(7,)"), f4x6), {"holds 24 bytes of data, but dtype '<f4' and shape (7,) need 28"});
  expect_npy_error(npy(dict("<f4", "(5,)"), f4x6), {"holds 24 bytes of data, but dtype '<f4' and shape (5,) need 20"});
  expect_npy_error(npy(dict("<f4", "(4611686018427387904, 4611686018427387904)"), f4x6),
                   {"shape (4611686018427387904, 4611686018427387904) of dtype '<f4' overflows"});
  expect_npy_error(npy(dict("<f8", "(9223372036854775807,)"), f4x6), {"overflows a 64-bit byte count"});
  expect_npy_error(npy(dict("<f4", "(99999999999999999999,)"), f4x6), {"overflows a 64-bit integer"});
  expect_npy_error(npy(dict("<f4", "(-6,)"), f4x6), {"malformed .npy header", "non-negative integer"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': False}", f4x6), {"malformed .npy header", "lacks 'shape'"});
  expect_npy_error(npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", f4x6),
                   {"'descr' is given twice"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", f4x6), {"unknown key 'x'"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': Fals, 'shape': (6,)}", f4x6), {"expected True or False"});
  expect_npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} junk", f4x6),
                   {"text after the closing '}'"});
  expect_npy_error(npy("{'descr': '<f4, 'fortran_order': False, 'shape': (6,)}", f4x6), {"malformed .npy header"});

  // A version 2.0 header over 64 KiB, and one that runs past its entry.
  std::string long_dict = dict("<f4", "(6,)");
  long_dict.append(70'000, ' ');
  expect_npy_error(npy(long_dict, f4x6, 2), {".npy header length", "exceeds the limit of 65536"});
  std::string past = npy(dict("<f4", "(6,)"), "");
  past[8] = static_cast<char>(0xff);  // header length 0x00ff + the prefix > the 128-byte entry
  expect_npy_error(past, {"runs past the end of the entry (128 bytes)"});
}

TEST(Npz, EntriesAnArchiveOfArraysCannotHold) {
  const std::string path = testing::temp_path("entries.npz");
  const std::string w = npy(dict("<f4", "(2,)"), bytes_of(std::vector<float>{1, 2}));
  write_zip(path, {{"w.npy", w}, {"README.txt", "hello"}});
  expect_error([&] { NpzFile f(path); }, {"entries.npz: entry 'README.txt' is not a .npy file"});
  write_zip(path, {{".npy", w}});
  expect_error([&] { NpzFile f(path); }, {"entry '.npy' is not a .npy file"});
  if (zip_compression_method_supported(ZIP_CM_BZIP2, 1)) {
    write_zip(path, {{"w.npy", w, ZIP_CM_BZIP2}});
    expect_error([&] { NpzFile f(path); },
                 {"array 'w' is compressed with zip method 12, not stored (0) or deflated (8)"});
  }
  if (zip_encryption_method_supported(ZIP_EM_AES_256, 1)) {
    write_zip(path, {{"w.npy", w}}, "secret");
    expect_error([&] { NpzFile f(path); }, {"array 'w' is encrypted"});
  }
  fs::remove(path);
}

long max_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

uint32_t get32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(s[at + static_cast<size_t>(i)]);
  return v;
}
void set32(std::string& s, size_t at, uint32_t v) {
  for (size_t i = 0; i < 4; ++i) s[at + i] = static_cast<char>(v >> (8 * i) & 0xff);
}

// An archive whose directory and .npy header agree on ~3.75 GiB of data it does not hold: the read
// throws when the data ends, having allocated only what arrived (the deflated case), or refuses at
// once (stored: the archive cannot hold the bytes it claims).
TEST(Npz, ClaimedSizesAreNotAllocatedInAdvance) {
  const uint32_t claimed = 0xF0000000u;  // a .npy file of 128 header bytes and (claimed - 128) / 4 floats
  const std::string shape = cat("(", (claimed - 128) / 4, ",)");
  for (const int32_t method : {ZIP_CM_DEFLATE, ZIP_CM_STORE}) {
    SCOPED_TRACE(::testing::Message() << "method " << method);
    const std::string path = testing::temp_path("claims.npz");
    const std::string member = npy(dict("<f4", shape), bytes_of(iota_f32(1000, 1.0f)));
    ASSERT_EQ(member.size(), 128u + 4000u);
    write_zip(path, {{"w.npy", member, method}});
    std::string bytes = read_all(path);
    // The uncompressed size, in the local header (offset 22) and the central directory's entry (24);
    // a stored entry's compressed size too (18 and 20).
    const size_t central = bytes.find("PK\x01\x02");
    ASSERT_NE(central, std::string::npos);
    ASSERT_EQ(get32(bytes, 22), member.size());
    ASSERT_EQ(get32(bytes, central + 24), member.size());
    set32(bytes, 22, claimed);
    set32(bytes, central + 24, claimed);
    if (method == ZIP_CM_STORE) {
      set32(bytes, 18, claimed);
      set32(bytes, central + 20, claimed);
    }
    write_all(path, bytes);
    const long before = max_rss_kib();
    const std::string what = open_and_read(path);
    EXPECT_LT(max_rss_kib() - before, 256 * 1024) << "KiB";
    ASSERT_FALSE(what.empty());
    EXPECT_NE(what.find("claims.npz"), std::string::npos) << what;
    if (method == ZIP_CM_DEFLATE) {
      EXPECT_NE(what.find("the archive is damaged"), std::string::npos) << what;
    }
    fs::remove(path);
  }
}

}  // namespace
}  // namespace tfm
