#include "io/npz.h"

#include <zip.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string_view>
#include <system_error>

#include "core/error.h"
#include "io/half.h"

namespace tfm {

static_assert(std::endian::native == std::endian::little, ".npy data is read as little-endian");

namespace {

// Entries are read in pieces of this many bytes (a multiple of every itemsize).
constexpr uint64_t kPiece = uint64_t{1} << 20;
constexpr std::string_view kMagic = "\x93NUMPY";

// libzip's message for an error code.
std::string zip_message(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

// "(2, 3)", "(5,)" or "()": a shape as NumPy writes it.
std::string python_shape(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// The parsed header of one .npy file.
struct NpyHeader {
  std::string dtype;
  char kind = 0;  // 'f', 'i', 'u', 'b' or 'c'
  uint64_t itemsize = 0;
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;  // the header's length, prefix included
  uint64_t data_bytes = 0;   // numel · itemsize
};

// The header's dict, a Python literal: {'descr': <str>, 'fortran_order': <bool>, 'shape': <tuple
// of ints>}, the keys in any order, each once, a trailing comma allowed (NumPy and cnpy write one).
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

  void parse(NpyHeader& h) {
    bool descr = false, fortran = false, shape = false, fortran_order = false;
    ws();
    expect('{');
    for (;;) {
      ws();
      if (peek() == '}') break;
      const std::string key = string("a key");
      ws();
      expect(':');
      ws();
      if (key == "descr") {
        if (descr) fail("'descr' is given twice");
        if (peek() == '[') fail("'descr' is a list: structured dtypes are not supported");
        h.dtype = string("the dtype");
        descr = true;
      } else if (key == "fortran_order") {
        if (fortran) fail("'fortran_order' is given twice");
        fortran_order = boolean();
        fortran = true;
      } else if (key == "shape") {
        if (shape) fail("'shape' is given twice");
        h.shape = tuple();
        shape = true;
      } else {
        fail(cat("unknown key '", printable(key), "' (a .npy header holds 'descr', 'fortran_order' and 'shape')"));
      }
      ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}'");
    }
    ++pos_;
    ws();
    if (pos_ != text_.size()) fail("text after the closing '}'");
    if (!descr || !fortran || !shape)
      throw Error(cat(where_, ": malformed .npy header: it lacks '",
                      !descr     ? "descr"
                      : !fortran ? "fortran_order"
                                 : "shape",
                      "': ", printable(text_)));
    TFM_CHECK(!fortran_order, where_, ": fortran_order is True (column-major data), which is not supported: save",
              " it in C order (numpy.ascontiguousarray)");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(cat(where_, ": malformed .npy header: ", what, " at offset ", pos_, " of: ", printable(text_)));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void ws() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail(cat("expected '", c, "'"));
    ++pos_;
  }
  // A quoted string, '...' or "...", without escapes (no dtype or key has one).
  std::string string(const char* what) {
    const char q = peek();
    if (q != '\'' && q != '"') fail(cat("expected ", what, " as a quoted string"));
    const size_t end = text_.find(q, pos_ + 1);
    if (end == std::string_view::npos) fail("a string is not closed");
    const std::string_view s = text_.substr(pos_ + 1, end - pos_ - 1);
    if (s.find('\\') != std::string_view::npos) fail("escapes in strings are not supported");
    pos_ = end + 1;
    return std::string(s);
  }
  bool boolean() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False for 'fortran_order'");
  }
  // (d0, d1, ...): non-negative integers (Python 2's NumPy wrote them as 3L).
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    for (;;) {
      ws();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in 'shape'");
      uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const uint64_t digit = static_cast<uint64_t>(peek() - '0');
        if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - digit) / 10)
          fail("a dimension in 'shape' overflows a 64-bit integer");
        v = v * 10 + digit;
        ++pos_;
      }
      if (peek() == 'L') ++pos_;
      dims.push_back(static_cast<int64_t>(v));
      ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') fail("expected ',' or ')' in 'shape'");
    }
    ++pos_;
    return dims;
  }

  std::string_view text_;
  const std::string& where_;
  size_t pos_ = 0;
};

// The dtype's kind and itemsize from its descr: a byte order ('<' little-endian, '|' not
// applicable, '>' big-endian), a kind among f, i, u, b, c and the itemsize in bytes. Big-endian
// data and every other kind (strings, objects, dates, ...) are refused.
void parse_dtype(NpyHeader& h, const std::string& where) {
  const std::string& d = h.dtype;
  const bool simple = d.size() >= 3 && d.size() <= 4 && std::string_view("<>|=").find(d[0]) != std::string_view::npos &&
                      std::all_of(d.begin() + 2, d.end(), [](char c) { return c >= '0' && c <= '9'; });
  TFM_CHECK(simple && std::string_view("fiubc").find(d[1]) != std::string_view::npos, where, ": dtype '", printable(d),
            "' is not supported (a number: '<f4', '<f2', '<f8', '|u1', '<i4', ...)");
  h.kind = d[1];
  h.itemsize = std::stoull(d.substr(2));
  TFM_CHECK(h.itemsize >= 1 && h.itemsize <= 16, where, ": dtype '", d, "' has an itemsize of ", h.itemsize, " bytes");
  TFM_CHECK(d[0] != '>' || h.itemsize == 1, where, ": dtype '", d,
            "' is big-endian, which is not supported (save the array little-endian: astype('<", d.substr(1), "'))");
  TFM_CHECK(d[0] != '|' || h.itemsize == 1, where, ": dtype '", d, "' has no byte order but ", h.itemsize, " bytes");
  TFM_CHECK(d[0] != '=', where, ": dtype '", d, "' has the writer's native byte order, which a file does not say");
}

// The prefix of a .npy file: its magic, version and header length; returns the header's total
// length (where the data starts). `first` holds the entry's first min(12, size) bytes.
uint64_t npy_header_length(std::string_view first, uint64_t entry_size, const std::string& where) {
  TFM_CHECK(first.size() >= 10, where, ": the entry is ", entry_size,
            " bytes, too short for a .npy file (its header alone takes at least 10)");
  TFM_CHECK(first.substr(0, 6) == kMagic, where, ": bad magic: not a .npy file (it must start with \\x93NUMPY), it",
            " starts with '", printable(first.substr(0, 8)), "'");
  const int major = static_cast<unsigned char>(first[6]), minor = static_cast<unsigned char>(first[7]);
  TFM_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, where, ": .npy format version ", major, ".", minor,
            " is not supported (1.0, 2.0, 3.0)");
  uint64_t prefix = 10, n = 0;
  if (major == 1) {
    n = static_cast<unsigned char>(first[8]) | static_cast<uint64_t>(static_cast<unsigned char>(first[9])) << 8;
  } else {
    TFM_CHECK(first.size() >= 12, where, ": the entry is ", entry_size, " bytes, too short for a version ", major,
              ".0 .npy header");
    prefix = 12;
    for (int i = 3; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(first[8 + i]);
  }
  TFM_CHECK(n <= kMaxNpyHeader, where, ": .npy header length ", n, " exceeds the limit of ", kMaxNpyHeader,
            " bytes (corrupt?)");
  TFM_CHECK(prefix + n <= entry_size, where, ": the .npy header (", prefix + n,
            " bytes) runs past the end of the entry (", entry_size, " bytes)");
  return prefix + n;
}

// Checks the header's dict (bytes [prefix, length) of `header`) and the data's size: the entry
// holds exactly product(shape) · itemsize bytes after the header.
NpyHeader parse_npy_header(std::string_view header, uint64_t entry_size, const std::string& where) {
  NpyHeader h;
  h.data_offset = header.size();
  const size_t prefix = header[6] == 1 ? 10 : 12;
  DictParser(header.substr(prefix), where).parse(h);
  parse_dtype(h, where);
  uint64_t bytes = h.itemsize;
  for (const int64_t d : h.shape)
    TFM_CHECK(!__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes), where, ": shape ",
              python_shape(h.shape), " of dtype '", h.dtype, "' overflows a 64-bit byte count");
  const uint64_t data = entry_size - h.data_offset;
  TFM_CHECK(bytes == data, where, ": the entry holds ", data, " bytes of data, but dtype '", h.dtype, "' and shape ",
            python_shape(h.shape), " need ", bytes, bytes > data ? ": truncated?" : "");
  h.data_bytes = bytes;
  return h;
}


}  // namespace

// One entry open for reading; closes it at the end of its scope.
class NpzFile::Reader {
 public:
  Reader(::zip* z, uint64_t index, const std::string& where) : where_(where) {
    file_ = zip_fopen_index(z, index, 0);
    TFM_CHECK(file_, where_, ": cannot open the entry: ", zip_error_strerror(zip_get_error(z)));
  }
  ~Reader() { zip_fclose(file_); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // Up to n bytes into dst; fewer only at the entry's end.
  uint64_t read_some(char* dst, uint64_t n) {
    uint64_t got = 0;
    while (got < n) {
      const zip_int64_t r = zip_fread(file_, dst + got, n - got);
      if (r < 0) fail();
      if (r == 0) break;
      got += static_cast<uint64_t>(r);
    }
    return got;
  }
  // Exactly n bytes into dst.
  void read(char* dst, uint64_t n, uint64_t expected_size) {
    const uint64_t got = read_some(dst, n);
    TFM_CHECK(got == n, where_, ": the entry ends after ", done_ + got, " of its ", expected_size,
              " bytes: the archive is damaged");
    done_ += n;
  }
  // Reads past the last byte, where libzip compares the CRC-32 and the size with the directory's.
  void finish() {
    char extra;
    TFM_CHECK(read_some(&extra, 1) == 0, where_, ": the entry holds more than the ", done_,
              " bytes its directory entry gives: the archive is damaged");
  }

 private:
  [[noreturn]] void fail() const {
    const zip_error_t* e = zip_file_get_error(file_);
    const int code = zip_error_code_zip(e);
    if (code == ZIP_ER_CRC)
      throw Error(
          cat(where_, ": CRC-32 mismatch: the entry's data is damaged (libzip: ", zip_file_strerror(file_), ")"));
    throw Error(
        cat(where_, ": cannot read the entry (damaged or truncated archive?): libzip: ", zip_file_strerror(file_)));
  }

  zip_file_t* file_;
  std::string where_;
  uint64_t done_ = 0;
};

void NpzFile::ZipCloser::operator()(::zip* z) const { zip_discard(z); }

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (const int64_t d : shape) n *= d;  // checked against the entry's size when the archive was opened
  return n;
}

NpzFile::NpzFile(const std::string& path) : path_(path) {
  std::error_code ec;
  TFM_CHECK(std::filesystem::exists(path, ec), "cannot open '", path, "': no such file");
  TFM_CHECK(!std::filesystem::is_directory(path, ec), "'", path, "' is a folder, not an .npz file");
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  TFM_CHECK(!ec, "cannot read the size of '", path, "': ", ec.message());
  // libzip opens an empty file as an empty archive; an .npz file has at least its directory's end.
  TFM_CHECK(file_size > 0, path, ": the file is empty (0 bytes): not a zip archive (an .npz file is one)");
  int code = 0;
  // ZIP_CHECKCONS: each entry's local header must agree with the central directory.
  ::zip* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (!z) {
    if (code == ZIP_ER_NOZIP)
      throw Error(cat(path, ": not a zip archive (an .npz file is one): truncated, or not an .npz file? (libzip: ",
                      zip_message(code), ")"));
    if (code == ZIP_ER_INCONS)
      throw Error(
          cat(path, ": the zip archive is inconsistent: damaged or truncated? (libzip: ", zip_message(code), ")"));
    throw Error(cat("cannot open '", path, "' as a zip archive: libzip: ", zip_message(code)));
  }
  zip_.reset(z);

  const zip_int64_t count = zip_get_num_entries(z, 0);
  TFM_CHECK(count >= 0, path, ": cannot count the archive's entries: libzip: ", zip_error_strerror(zip_get_error(z)));
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    TFM_CHECK(zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st) == 0, path, ": cannot read entry ", i,
              " of the archive's directory: libzip: ", zip_error_strerror(zip_get_error(z)));
    constexpr zip_uint64_t kNeeded =
        ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD | ZIP_STAT_ENCRYPTION_METHOD;
    TFM_CHECK((st.valid & kNeeded) == kNeeded && st.name, path, ": entry ", i,
              " of the archive's directory lacks its name, sizes or methods");
    const std::string entry_name = st.name;
    TFM_CHECK(entry_name.size() > 4 && entry_name.ends_with(".npy"), path, ": entry '", printable(entry_name),
              "' is not a .npy file (an .npz archive holds '<array>.npy' entries only)");
    const std::string name = entry_name.substr(0, entry_name.size() - 4);
    const std::string where = cat(path, ": array '", printable(name), "'");
    TFM_CHECK(st.encryption_method == ZIP_EM_NONE, where, " is encrypted, which is not supported");
    TFM_CHECK(st.comp_method == ZIP_CM_STORE || st.comp_method == ZIP_CM_DEFLATE, where,
              " is compressed with zip method ", st.comp_method, ", not stored (0) or deflated (8)");
    TFM_CHECK(st.comp_size <= file_size, where, ": its directory entry gives ", st.comp_size,
              " bytes in the archive, more than the file's ", file_size, ": the archive is damaged");
    TFM_CHECK(st.comp_method != ZIP_CM_STORE || st.comp_size == st.size, where, " is stored but its directory gives ",
              st.comp_size, " bytes in the archive for ", st.size, " bytes of data: the archive is damaged");
    TFM_CHECK(!index_.count(name), path, ": array '", printable(name), "' appears twice in the archive");

    // The .npy header: the prefix, then the length it gives (at most kMaxNpyHeader + 12 bytes).
    Reader reader(z, static_cast<zip_uint64_t>(i), where);
    std::string header(static_cast<size_t>(std::min<uint64_t>(12, st.size)), '\0');
    reader.read(header.data(), header.size(), st.size);
    const uint64_t length = npy_header_length(header, st.size, where);
    const size_t had = header.size();
    if (length > had) {
      header.resize(static_cast<size_t>(length));
      reader.read(header.data() + had, length - had, st.size);
    } else {
      header.resize(static_cast<size_t>(length));
    }
    const NpyHeader h = parse_npy_header(header, st.size, where);

    index_[name] = arrays_.size();
    arrays_.push_back({name, h.dtype, h.shape});
    entries_.push_back({static_cast<uint64_t>(i), h.data_offset, h.data_bytes, h.itemsize, st.comp_size});
  }
}

NpzFile::~NpzFile() = default;
NpzFile::NpzFile(NpzFile&&) noexcept = default;
NpzFile& NpzFile::operator=(NpzFile&&) noexcept = default;

const NpyArray& NpzFile::array(const std::string& name) const {
  const auto it = index_.find(name);
  TFM_CHECK(it != index_.end(), path_, ": no array named '", name, "' (", arrays_.size(), " arrays in the archive)");
  return arrays_[it->second];
}

const NpzFile::Entry& NpzFile::entry(const std::string& name) const {
  array(name);  // throws naming it when absent
  return entries_[index_.at(name)];
}

// The data of `name` in pieces: consume(reader, n) reads the next n bytes through reader.read.
// The first piece comes after the header, the last is followed by the check of the entry's end.
template <class Consume>
void NpzFile::stream(const std::string& name, Consume&& consume) const {
  const Entry& e = entry(name);
  const std::string where = cat(path_, ": array '", printable(name), "'");
  Reader reader(zip_.get(), e.index, where);
  const uint64_t size = e.data_offset + e.data_bytes;
  std::string header(static_cast<size_t>(e.data_offset), '\0');
  reader.read(header.data(), header.size(), size);
  for (uint64_t off = 0; off < e.data_bytes; off += kPiece) consume(reader, std::min(kPiece, e.data_bytes - off), size);
  reader.finish();
}

namespace {
// The capacity to reserve for an array's values: all of them when the archive can hold their bytes
// as they are (stored, or deflated no smaller than a quarter), else a share that grows as the data
// arrives, so that a directory claiming more than its compressed bytes can give allocates nothing
// in advance.
uint64_t initial_capacity(uint64_t count, uint64_t itemsize, uint64_t comp_size) {
  const uint64_t plausible = comp_size / itemsize * 4 + kPiece;
  return std::min(count, plausible);
}
}  // namespace

std::vector<float> NpzFile::read_f32(const std::string& name) const {
  const NpyArray& a = array(name);
  const Entry& e = entry(name);
  TFM_CHECK(a.dtype == "<f4" || a.dtype == "<f2" || a.dtype == "<f8", path_, ": array '", name, "' has dtype '",
            a.dtype, "', not a float ('<f4', '<f2' or '<f8')");
  const uint64_t count = e.data_bytes / e.itemsize;
  std::vector<float> out;
  out.reserve(static_cast<size_t>(initial_capacity(count, e.itemsize, e.comp_size)));
  std::vector<char> scratch(a.dtype == "<f4" ? 0 : static_cast<size_t>(std::min(kPiece, e.data_bytes)));
  stream(name, [&](Reader& reader, uint64_t n, uint64_t size) {
    const size_t had = out.size(), values = static_cast<size_t>(n / e.itemsize);
    out.resize(had + values);
    if (e.itemsize == 4) {
      reader.read(reinterpret_cast<char*>(out.data() + had), n, size);
    } else if (e.itemsize == 2) {
      reader.read(scratch.data(), n, size);
      for (size_t i = 0; i < values; ++i) {
        uint16_t h;
        std::memcpy(&h, scratch.data() + 2 * i, 2);
        out[had + i] = half_to_float(h);
      }
    } else {
      reader.read(scratch.data(), n, size);
      for (size_t i = 0; i < values; ++i) {
        double d;
        std::memcpy(&d, scratch.data() + 8 * i, 8);
        const float f = static_cast<float>(d);
        TFM_CHECK(std::isfinite(f) || !std::isfinite(d), path_, ": array '", name, "' holds ", d, " at index ", had + i,
                  ", beyond float32's range");
        out[had + i] = f;
      }
    }
  });
  return out;
}

std::string NpzFile::read_bytes(const std::string& name) const {
  const NpyArray& a = array(name);
  const Entry& e = entry(name);
  TFM_CHECK(e.itemsize == 1, path_, ": array '", name, "' has dtype '", a.dtype,
            "', not one of 1 byte ('|i1', '<i1', '|u1', '|b1')");
  std::string out;
  out.reserve(static_cast<size_t>(initial_capacity(e.data_bytes, 1, e.comp_size)));
  stream(name, [&](Reader& reader, uint64_t n, uint64_t size) {
    const size_t had = out.size();
    out.resize(had + static_cast<size_t>(n));
    reader.read(out.data() + had, n, size);
  });
  return out;
}

}  // namespace tfm
