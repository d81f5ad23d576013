#pragma once
// The safetensors format (read by Hugging Face, candle and others):
//   8 bytes: N, the header's length, unsigned little-endian
//   N bytes: a JSON object; "__metadata__" maps strings to strings, every other key names a tensor:
//            {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} (byte offsets into the data)
//   the data: every tensor's bytes, row-major, little-endian, covering the data with no gaps or overlaps
// Reading validates all of it and throws tfm::Error naming the problem; it never reads out of bounds.
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tfm {

// The largest header accepted (as the reference implementation: 100 MB).
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

struct NamedTensor {
  std::string name;
  Tensor tensor;  // CPU; float32, float64 or int32
};

// Writes atomically (io/atomic_file.h). Names must be unique and not "__metadata__".
void write_safetensors(const std::string& path, const std::map<std::string, std::string>& metadata,
                       const std::vector<NamedTensor>& tensors);

class SafetensorsFile {
 public:
  // Reads and validates a file's header (the tensors' bytes are read by tensor(), from the file
  // kept open); `parse` validates a buffer in memory (`source` names it in errors).
  static SafetensorsFile read(const std::string& path);
  static SafetensorsFile parse(std::string bytes, const std::string& source);

  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& source() const { return source_; }  // the path (or the name given to parse)
  std::vector<std::string> names() const;  // in file order
  bool has(const std::string& name) const { return index_.count(name) > 0; }
  // A copy of the named tensor; throws naming the tensor and the file if it is absent. Reads from
  // the open file (read()): not for concurrent calls on one SafetensorsFile or its copies.
  Tensor tensor(const std::string& name) const;
  // The named tensor's bytes straight into dst (same shape and dtype, on the CPU): loading a model
  // without a temporary copy of each tensor. The same caveat as tensor(): not for concurrent calls.
  void read_into(const std::string& name, const Tensor& dst) const;
  Shape shape(const std::string& name) const;
  DType dtype(const std::string& name) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;  // into data
  };
  const Entry& entry(const std::string& name) const;
  // Validates the JSON header (n bytes) of a file of `size` bytes and fills the index.
  void index(const char* header_text, uint64_t n, uint64_t size, const std::string& source);

  std::string source_;
  std::string bytes_;                   // the whole file (parse), or empty
  std::shared_ptr<std::ifstream> file_;  // the open file (read), or null
  uint64_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<Entry> entries_;
  std::map<std::string, size_t> index_;
};

}  // namespace tfm
