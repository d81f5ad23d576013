#pragma once
// NumPy's .npz archives, as Marian (OPUS-MT) saves its models: a zip archive (read through libzip)
// whose entries, stored or deflated, are .npy files named "<array>.npy". Each .npy file is
//   6 bytes: the magic "\x93NUMPY"
//   2 bytes: the format version, major and minor: 1.0, 2.0 or 3.0
//   2 bytes (1.0) or 4 bytes (2.0, 3.0): N, the header's length, unsigned little-endian
//   N bytes: a Python dict literal, {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), },
//            padded with spaces and ended by a newline
//   the data: product(shape) values of dtype `descr`, row-major (C order)
// Marian writes them with its own copy of cnpy: stored entries, version 1.0, "<f4" weights and the
// model's configuration as the "<i1" array "special:model.yml" (YAML text ending with a NUL).
//
// Opening reads the archive's directory and every entry's .npy header and validates them (no data
// is read); each read_* call then reads one entry from the start, once, straight into its result,
// and checks the entry's CRC-32 at its end. Every size is checked against the entry's uncompressed
// size before anything is allocated, and memory grows only as data arrives, so a damaged or
// hostile archive throws tfm::Error naming the file, the array and the problem; it never crashes.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct zip;  // libzip's zip_t, kept out of this header

namespace tfm {

// The largest .npy header accepted (NumPy's own reader stops at 10,000 bytes by default).
constexpr uint64_t kMaxNpyHeader = 64 * 1024;

struct NpyArray {
  std::string name;            // the entry's name without ".npy"
  std::string dtype;           // NumPy's descr: "<f4", "<f2", "<f8", "|u1", "<i1", ...
  std::vector<int64_t> shape;  // empty for a scalar
  int64_t numel() const;       // product(shape); 1 for a scalar
};

class NpzFile {
 public:
  // Opens and indexes the archive; throws naming the file and the problem: not a zip archive,
  // truncated, an entry that is not "<name>.npy", encrypted or neither stored nor deflated, a
  // repeated name, and any .npy header that is not as described above (bad magic, an unknown
  // version, a header over kMaxNpyHeader, a malformed dict, fortran_order True, a structured,
  // object or big-endian dtype, a shape whose byte count overflows, or data that is not exactly
  // product(shape) · itemsize bytes).
  explicit NpzFile(const std::string& path);
  ~NpzFile();
  NpzFile(NpzFile&&) noexcept;
  NpzFile& operator=(NpzFile&&) noexcept;

  const std::string& path() const { return path_; }
  const std::vector<NpyArray>& arrays() const { return arrays_; }  // in archive order
  bool has(const std::string& name) const { return index_.count(name) > 0; }
  // The named array; throws naming it and the file when there is none.
  const NpyArray& array(const std::string& name) const;

  // The values as float32, row-major: "<f4" as is; "<f2" and "<f8" converted (a finite "<f8"
  // value beyond float32's range throws, naming its index). Any other dtype throws naming it.
  std::vector<float> read_f32(const std::string& name) const;
  // The data of a 1-byte dtype ("|i1", "<i1", "|u1", "|b1", ...) as it is, e.g. the text of
  // Marian's "special:model.yml"; any other dtype throws naming it.
  std::string read_bytes(const std::string& name) const;

  // Each read_* call also throws when the entry's data differs from what its header and the
  // archive's directory promise: fewer or more bytes, or a CRC-32 mismatch. The archive is read
  // through one libzip handle: not for concurrent calls on one NpzFile.

 private:
  struct Entry {
    uint64_t index;        // in the zip archive
    uint64_t data_offset;  // where the data starts in the .npy file (after the header)
    uint64_t data_bytes;   // numel · itemsize
    uint64_t itemsize;
    uint64_t comp_size;    // the entry's compressed size
  };
  struct ZipCloser {
    void operator()(::zip* z) const;
  };
  class Reader;
  const Entry& entry(const std::string& name) const;
  // Reads the entry, its header skipped, in pieces of at most 1 MiB: consume(reader, n, size)
  // reads the next n bytes of data through reader.read; then checks the entry's end and CRC-32.
  template <class Consume>
  void stream(const std::string& name, Consume&& consume) const;

  std::string path_;
  std::unique_ptr<::zip, ZipCloser> zip_;
  std::vector<NpyArray> arrays_;
  std::vector<Entry> entries_;  // parallel to arrays_
  std::map<std::string, size_t> index_;
};

}  // namespace tfm
