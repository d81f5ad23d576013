#pragma once
// The safetensors format (read by Hugging Face, candle and others):
//   8 bytes: N, the header's length, unsigned little-endian
//   N bytes: a JSON object; "__metadata__" maps strings to strings, every other key names a tensor:
//            {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} (byte offsets into the data)
//   the data: every tensor's bytes, row-major, little-endian, covering the data with no gaps or overlaps
// Reading validates all of it and throws tfm::Error naming the problem; it never reads out of bounds.
//
// Files written here carry a checksum in the metadata, "checksum": "xxh3-64:<16 hex digits>" (io/
// checksum.h): XXH3-64 of the whole file, read with those 16 digits as '0's, so that it covers the
// header length, every byte of the header (the checksum's own digits aside) and every byte of data.
// Every float tensor read is checked for NaN and infinities, which no file of this program holds.
// Tensors stored as F16 or BF16 (Hugging Face files saved in half precision) read as float32, each
// value exactly; files written here hold F32, F64, I32 and I8 only.
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/tensor.h"

namespace tfm {

class Checksum;

// The largest header accepted (as the reference implementation: 100 MB).
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

struct NamedTensor {
  std::string name;
  Tensor tensor;  // CPU; float32, float64 or int32
};

// The metadata key of the checksum.
inline constexpr const char* kChecksumKey = "checksum";

// Writes atomically (io/atomic_file.h), with the checksum (replacing any "checksum" in `metadata`).
// Names must be unique and not "__metadata__".
void write_safetensors(const std::string& path, const std::map<std::string, std::string>& metadata,
                       const std::vector<NamedTensor>& tensors);

class SafetensorsFile {
 public:
  // How a tensor's values are stored: as its dtype, or as 16-bit floats that reading widens to
  // float32 (dtype then F32).
  // kOpaque: a dtype this program does not read (I64, U8, BOOL, ...), which a Hugging Face
  // checkpoint may hold as a buffer its importer passes over; reading such a tensor, or asking
  // its dtype, throws naming it.
  enum class Stored : uint8_t { kAsDtype, kF16, kBf16, kOpaque };
  // Reads and validates a file's header (the tensors' bytes are read by tensor(), from the file
  // kept open); `parse` validates a buffer in memory (`source` names it in errors).
  static SafetensorsFile read(const std::string& path);
  static SafetensorsFile parse(std::string bytes, const std::string& source);

  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& source() const { return source_; }  // the path (or the name given to parse)
  std::vector<std::string> names() const;  // in file order
  bool has(const std::string& name) const { return index_.count(name) > 0; }
  // A copy of the named tensor; throws naming the tensor and the file if it is absent, or if a
  // float tensor holds a NaN or an infinity (naming the first one's index). Reads from the open
  // file (read()): not for concurrent calls on one SafetensorsFile or its copies.
  Tensor tensor(const std::string& name) const;
  // The named tensor's bytes straight into dst (same shape and dtype, on the CPU): loading a model
  // without a temporary copy of each tensor. The same checks and caveat as tensor().
  void read_into(const std::string& name, const Tensor& dst) const;
  Shape shape(const std::string& name) const;
  DType dtype(const std::string& name) const;

  // The checksum the file records, if any (files of older versions have none).
  bool has_checksum() const { return checksum_.has_value(); }
  // Where read_tensors puts a tensor: a tensor of its shape and dtype on the CPU, or null to skip it.
  // The pointer is used before the next call only.
  using Destination = std::function<const Tensor*(const std::string& name)>;
  // Reads the tensors in file order, each into destination(name) as read_into does. With `verify`
  // and a file that records a checksum, hashes the header and every byte of data on the way (the
  // skipped tensors' too) and throws, naming the file and both values, if the result differs from
  // the recorded one; that error comes before one for a non-finite value. Returns whether the data
  // was verified: false when `verify` is off or the file records no checksum. Not for concurrent
  // calls, as tensor().
  bool read_tensors(const Destination& destination, bool verify) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;  // into data
    Stored stored = Stored::kAsDtype;
    std::string code;  // the dtype as the header names it ("F16", "I64")
    uint64_t element_bytes() const;
  };
  const Entry& entry(const std::string& name) const;
  const Entry& readable(const std::string& name) const;  // entry(), but not kOpaque
  // Validates the JSON header (n bytes) of a file of `size` bytes and fills the index.
  void index(const char* header_text, uint64_t n, uint64_t size, const std::string& source);
  // The header's "__metadata__": its strings, and the recorded checksum with its place in header_.
  void read_metadata(const nlohmann::json& value);
  // One tensor's entry of the header, checked: dtype, shape, and data_offsets inside the data.
  static Entry parse_entry(const std::string& key, const nlohmann::json& value, uint64_t data_size,
                           const std::string& source);
  // Throws unless the entries cover the data exactly: no overlap, no gap, nothing left over.
  static void check_tiling(const std::vector<Entry>& entries, uint64_t data_size, const std::string& source);
  // Reads e's bytes in pieces into dst (e.end - e.begin bytes), or through a scratch buffer when
  // dst is null; each piece is hashed into `sum` when given, and checked for non-finite values
  // when it goes to dst: the first one throws, or, with `non_finite`, is described there (if it
  // is empty) and the reading goes on.
  void stream(const Entry& e, char* dst, Checksum* sum, std::string* non_finite) const;

  std::string source_;
  std::string bytes_;                   // the whole file (parse), or empty
  std::shared_ptr<std::ifstream> file_;  // the open file (read), or null
  std::string header_;                  // the header's text (N bytes)
  uint64_t data_start_ = 0;
  std::optional<uint64_t> checksum_;    // the recorded checksum
  size_t checksum_at_ = 0;              // the position of its 16 digits in header_
  std::map<std::string, std::string> metadata_;
  std::vector<Entry> entries_;
  std::map<std::string, size_t> index_;
};

}  // namespace tfm
