#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/json_text.h"
#include "io/atomic_file.h"
#include "io/checksum.h"
#include "io/half.h"

namespace tfm {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {
const char* dtype_code(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    case DType::I32: return "I32";
    case DType::I8: return "I8";
    case DType::BF16: return "BF16";
  }
  return "?";
}

// The bytes of a value of a dtype that is indexed but not read (Hugging Face's int64 buffers such as
// BERT's position_ids, masks of bools), or 0 for a dtype not known at all (refused on opening).
int opaque_bytes(const std::string& code) {
  if (code == "I64" || code == "U64") return 8;
  if (code == "U32") return 4;
  if (code == "I16" || code == "U16") return 2;
  if (code == "U8" || code == "BOOL") return 1;
  return 0;
}

// The dtype a tensor reads as, and how it is stored.
std::pair<DType, SafetensorsFile::Stored> parse_dtype(const std::string& code, const std::string& tensor,
                                                      const std::string& source) {
  using Stored = SafetensorsFile::Stored;
  if (code == "F32") return {DType::F32, Stored::kAsDtype};
  if (code == "F64") return {DType::F64, Stored::kAsDtype};
  if (code == "I32") return {DType::I32, Stored::kAsDtype};
  if (code == "I8") return {DType::I8, Stored::kAsDtype};
  if (code == "F16") return {DType::F32, Stored::kF16};
  if (code == "BF16") return {DType::F32, Stored::kBf16};
  if (opaque_bytes(code) > 0) return {DType::I8, Stored::kOpaque};
  throw Error(cat(source, ": tensor '", tensor, "' has dtype '", code,
                  "', which is not supported (F32, F64, I32, I8; F16 and BF16 read as F32)"));
}

uint64_t read_u64_le(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Tensors are read, hashed and checked in pieces of this many bytes (a multiple of every dtype's
// size), each while it is in cache.
constexpr uint64_t kPiece = uint64_t{1} << 20;

// The position in a header's text of the checksum's 16 digits: just after the one occurrence of
// "checksum":"xxh3-64: — a quote inside a JSON string is escaped, so the pattern can only be a key
// with its string value. npos if it does not occur; an error if it occurs twice.
size_t find_checksum_digits(std::string_view header, const std::string& source) {
  const std::string pattern = cat('"', kChecksumKey, "\":\"", kChecksumPrefix);
  const size_t at = header.find(pattern);
  if (at == std::string_view::npos) return at;
  TFM_CHECK(header.find(pattern, at + 1) == std::string_view::npos, source, ": the header holds two checksums");
  return at + pattern.size();
}

// The index of the first NaN or infinity among the float values (dtype F32 or F64) of p[0, n), or -1.
template <class Bits, Bits kExponent>
int64_t first_non_finite(const char* p, size_t n) {
  const size_t count = n / sizeof(Bits);
  // A value is not finite when its exponent bits are all ones. The flag is or-ed over every value
  // (a loop the compiler vectorizes); only a file that has one looks for where it is.
  Bits bad = 0;
  for (size_t i = 0; i < count; ++i) {
    Bits b;
    std::memcpy(&b, p + i * sizeof(Bits), sizeof(Bits));
    bad |= static_cast<Bits>((b & kExponent) == kExponent);
  }
  if (!bad) return -1;
  for (size_t i = 0; i < count; ++i) {
    Bits b;
    std::memcpy(&b, p + i * sizeof(Bits), sizeof(Bits));
    if ((b & kExponent) == kExponent) return static_cast<int64_t>(i);
  }
  return -1;
}

int64_t first_non_finite(const char* p, size_t n, DType dtype) {
  if (dtype == DType::F32) return first_non_finite<uint32_t, 0x7f800000u>(p, n);
  if (dtype == DType::F64) return first_non_finite<uint64_t, 0x7ff0000000000000u>(p, n);
  return -1;
}

// "NaN", "+Inf" or "-Inf": the value at p (dtype F32 or F64).
std::string non_finite_name(const char* p, DType dtype) {
  double v;
  if (dtype == DType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    v = f;
  } else {
    std::memcpy(&v, p, 8);
  }
  return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
}

// " ([2, 5])": a flat index as a position in `shape`, for tensors of two dimensions or more.
std::string position(int64_t index, const Shape& shape) {
  if (shape.rank() < 2) return "";
  std::vector<int64_t> at(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    at[static_cast<size_t>(d)] = index % shape[d];
    index /= shape[d];
  }
  std::string out = " ([";
  for (size_t d = 0; d < at.size(); ++d) out += (d ? ", " : "") + std::to_string(at[d]);
  return out + "])";
}
}  // namespace

void write_safetensors(const std::string& path, const std::map<std::string, std::string>& metadata,
                       const std::vector<NamedTensor>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  // The checksum's digits are '0's while the file is hashed, then replaced by its value.
  std::map<std::string, std::string> with_checksum = metadata;
  with_checksum[kChecksumKey] = format_checksum(0);
  header["__metadata__"] = with_checksum;
  uint64_t offset = 0;
  for (const NamedTensor& nt : tensors) {
    TFM_CHECK(nt.name != "__metadata__" && !header.contains(nt.name), "write_safetensors: tensor name '", nt.name,
              "' is reserved or repeated");
    TFM_CHECK(nt.tensor.device() == Device::CPU, "write_safetensors: tensor '", nt.name, "' is not on the CPU");
    header[nt.name] = {{"dtype", dtype_code(nt.tensor.dtype())},
                       {"shape", nt.tensor.shape().to_vector()},
                       {"data_offsets", {offset, offset + nt.tensor.bytes()}}};
    offset += nt.tensor.bytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  const uint64_t n = text.size();
  char len[8];
  std::memcpy(len, &n, 8);
  const size_t digits = find_checksum_digits(text, path);
  TFM_CHECK(digits != std::string::npos, "write_safetensors: no checksum in the header of '", path, "'");
  Checksum sum;
  sum.update(len, 8);
  sum.update(text);
  for (const NamedTensor& nt : tensors) sum.update(nt.tensor.raw(), nt.tensor.bytes());
  text.replace(digits, kChecksumDigits, format_checksum(sum.value()).substr(kChecksumPrefix.size()));
  write_file_atomic(path, [&](std::ostream& out) {
    out.write(len, 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const NamedTensor& nt : tensors)
      out.write(static_cast<const char*>(nt.tensor.raw()), static_cast<std::streamsize>(nt.tensor.bytes()));
  });
}

namespace {
// The first 8 bytes give the header's length n; checks it against the limit and the file's size.
uint64_t header_length(const char* first8, uint64_t size, const std::string& source) {
  TFM_CHECK(size >= 8, source, ": not a safetensors file: ", size, " bytes, too short for the 8-byte header length");
  TFM_CHECK(std::memcmp(first8, "PK\x03\x04", 4) != 0, source,
            ": a zip archive, not a safetensors file: a Marian model (.npz) is converted first with `transformer "
            "import marian`, a Hugging Face folder with `transformer import hf` (docs/import.md)");
  const uint64_t n = read_u64_le(first8);
  TFM_CHECK(n <= kMaxSafetensorsHeader, source, ": header length ", n, " exceeds the limit of ", kMaxSafetensorsHeader,
            " bytes (corrupt or not a safetensors file)");
  TFM_CHECK(n <= size - 8, source, ": header length ", n, " runs past the end of the file (", size,
            " bytes): truncated?");
  return n;
}
}  // namespace

// Reads the header only; each tensor's bytes are read from the open file when asked for, so that
// loading a model holds the file's bytes one tensor at a time, not all at once beside the model.
SafetensorsFile SafetensorsFile::read(const std::string& path) {
  TFM_CHECK(!std::filesystem::is_directory(path), "'", path, "' is a folder, not a file");
  auto in = std::make_shared<std::ifstream>(path, std::ios::binary);
  TFM_CHECK(in->is_open(), "cannot open '", path, "': ", std::strerror(errno));
  in->seekg(0, std::ios::end);
  const std::streamoff end = in->tellg();
  if (end < 0) return parse(read_file(path), path);  // a pipe (-m <(zcat ...)): read it whole
  const uint64_t size = static_cast<uint64_t>(end);
  char first8[8] = {};
  in->seekg(0);
  in->read(first8, size >= 8 ? 8 : 0);
  const uint64_t n = header_length(first8, size, path);
  std::string header(n, '\0');
  in->read(header.data(), static_cast<std::streamsize>(n));
  TFM_CHECK(in->good(), "cannot read the header of '", path, "': ", std::strerror(errno));
  SafetensorsFile f;
  f.index(header.data(), n, size, path);
  f.file_ = std::move(in);
  return f;
}

SafetensorsFile SafetensorsFile::parse(std::string bytes, const std::string& source) {
  SafetensorsFile f;
  const uint64_t n = header_length(bytes.data(), bytes.size(), source);
  f.index(bytes.data() + 8, n, bytes.size(), source);
  f.bytes_ = std::move(bytes);
  return f;
}

namespace {
nlohmann::json parse_header(const char* header_text, uint64_t n, const std::string& source) {
  const nlohmann::json header = parse_json(std::string_view(header_text, n), cat(source, ": the header"));
  TFM_CHECK(header.is_object(), source, ": the header must be a JSON object, got ", header.type_name());
  return header;
}
}  // namespace

void SafetensorsFile::index(const char* header_text, uint64_t n, uint64_t size, const std::string& source) {
  source_ = source;
  header_.assign(header_text, n);
  data_start_ = 8 + n;
  const uint64_t data_size = size - data_start_;
  const nlohmann::json header = parse_header(header_text, n, source);
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      read_metadata(value);
      continue;
    }
    index_[key] = entries_.size();
    entries_.push_back(parse_entry(key, value, data_size, source));
  }
  check_tiling(entries_, data_size, source);
  // File order = data order, which is how write_safetensors lays them out.
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_[entries_[i].name] = i;
}

void SafetensorsFile::read_metadata(const nlohmann::json& value) {
  TFM_CHECK(value.is_object(), source_, ": __metadata__ must be an object, got ", value.type_name());
  for (const auto& [mk, mv] : value.items()) {
    TFM_CHECK(mv.is_string(), source_, ": metadata '", mk, "' must be a string, got ", mv.type_name());
    metadata_[mk] = mv.get<std::string>();
  }
  const auto it = metadata_.find(kChecksumKey);
  if (it == metadata_.end()) return;
  checksum_ = parse_checksum(it->second, cat(source_, ": metadata '", kChecksumKey, "'"));
  checksum_at_ = find_checksum_digits(header_, source_);
  TFM_CHECK(checksum_at_ != std::string::npos &&
                std::string_view(header_).substr(checksum_at_ - kChecksumPrefix.size(),
                                                 kChecksumPrefix.size() + kChecksumDigits + 1) == it->second + '"',
            source_, ": the checksum is not written in the header as this program writes it (\"", kChecksumKey,
            "\":\"", kChecksumPrefix, "...\")");
}

SafetensorsFile::Entry SafetensorsFile::parse_entry(const std::string& key, const nlohmann::json& value,
                                                    uint64_t data_size, const std::string& source) {
  TFM_CHECK(value.is_object(), source, ": entry '", key, "' must be an object, got ", value.type_name());
  for (const char* field : {"dtype", "shape", "data_offsets"})
    TFM_CHECK(value.contains(field), source, ": tensor '", key, "' has no '", field, "'");
  TFM_CHECK(value["dtype"].is_string(), source, ": tensor '", key, "': dtype must be a string");
  const auto [dtype, stored] = parse_dtype(value["dtype"].get<std::string>(), key, source);
  Entry e{key, dtype, Shape(), 0, 0, stored};
  e.code = value["dtype"].get<std::string>();
  const nlohmann::json& shape = value["shape"];
  TFM_CHECK(shape.is_array() && shape.size() <= static_cast<size_t>(Shape::kMaxRank), source, ": tensor '", key,
            "': shape must be an array of at most ", Shape::kMaxRank, " dimensions, got ", json_quote(shape));
  std::vector<int64_t> dims;
  uint64_t bytes = e.element_bytes();
  for (const auto& d : shape) {
    TFM_CHECK(d.is_number_unsigned(), source, ": tensor '", key, "': dimension ", json_quote(d),
              " is not a non-negative integer");
    const uint64_t v = d.get<uint64_t>();
    TFM_CHECK(v <= data_size && (v == 0 || bytes <= data_size / v), source, ": tensor '", key, "' of shape ",
              json_quote(shape), " is larger than the file's data (", data_size, " bytes)");
    bytes *= v;
    dims.push_back(static_cast<int64_t>(v));
  }
  e.shape = Shape(dims);
  const nlohmann::json& off = value["data_offsets"];
  TFM_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() && off[1].is_number_unsigned(),
            source, ": tensor '", key, "': data_offsets must be two non-negative integers, got ", json_quote(off));
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  TFM_CHECK(e.begin <= e.end && e.end <= data_size, source, ": tensor '", key, "': data_offsets [", e.begin, ", ",
            e.end, "] lie outside the data (", data_size, " bytes): truncated?");
  TFM_CHECK(e.end - e.begin == bytes, source, ": tensor '", key, "': data_offsets [", e.begin, ", ", e.end, "] hold ",
            e.end - e.begin, " bytes, but dtype ", value["dtype"].get<std::string>(), " and shape ", json_quote(shape),
            " need ", bytes);
  return e;
}

// The tensors must tile the data exactly: no overlaps, no gaps, nothing left over.
void SafetensorsFile::check_tiling(const std::vector<Entry>& entries, uint64_t data_size, const std::string& source) {
  std::vector<const Entry*> order;
  for (const Entry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t expected = 0;
  for (const Entry* e : order) {
    TFM_CHECK(e->begin >= expected, source, ": tensor '", e->name, "' at bytes [", e->begin, ", ", e->end,
              ") overlaps the tensor before it");
    TFM_CHECK(e->begin == expected, source, ": a gap of ", e->begin - expected, " bytes before tensor '", e->name,
              "'");
    expected = e->end;
  }
  TFM_CHECK(expected == data_size, source, ": ", data_size - expected,
            " bytes after the last tensor belong to no tensor");
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.push_back(e.name);
  return out;
}

uint64_t SafetensorsFile::Entry::element_bytes() const {
  if (stored == Stored::kAsDtype) return size_of(dtype);
  return stored == Stored::kOpaque ? static_cast<uint64_t>(opaque_bytes(code)) : 2;
}

const SafetensorsFile::Entry& SafetensorsFile::entry(const std::string& name) const {
  auto it = index_.find(name);
  TFM_CHECK(it != index_.end(), source_, ": no tensor named '", name, "'");
  return entries_[it->second];
}

const SafetensorsFile::Entry& SafetensorsFile::readable(const std::string& name) const {
  const Entry& e = entry(name);
  TFM_CHECK(e.stored != Stored::kOpaque, source_, ": tensor '", name, "' has dtype '", e.code,
            "', which is not supported (F32, F64, I32, I8; F16 and BF16 read as F32)");
  return e;
}

Tensor SafetensorsFile::tensor(const std::string& name) const {
  const Entry& e = readable(name);
  Tensor t = Tensor::empty(e.shape, e.dtype);
  read_into(name, t);
  return t;
}

void SafetensorsFile::read_into(const std::string& name, const Tensor& t) const {
  const Entry& e = readable(name);
  TFM_CHECK(t.shape() == e.shape && t.dtype() == e.dtype && t.device() == Device::CPU, source_, ": tensor '", name,
            "' is ", tfm::name(e.dtype), " ", e.shape, ", cannot read it into ", tfm::name(t.dtype()), " ", t.shape());
  stream(e, static_cast<char*>(t.raw()), nullptr, nullptr);
}

void SafetensorsFile::stream(const Entry& e, char* dst, Checksum* sum, std::string* non_finite) const {
  const uint64_t len = e.end - e.begin;
  if (len == 0) return;
  // 16-bit floats are read into scratch and widened into dst (twice the bytes) piece by piece.
  const bool widen = e.stored != Stored::kAsDtype && dst;
  std::vector<char> scratch(dst && !widen ? 0 : std::min(len, kPiece));
  if (file_) {
    file_->clear();
    file_->seekg(static_cast<std::streamoff>(data_start_ + e.begin));
  }
  for (uint64_t off = 0; off < len; off += kPiece) {
    const uint64_t n = std::min(kPiece, len - off);
    char* piece = dst && !widen ? dst + off : scratch.data();
    if (file_) {
      file_->read(piece, static_cast<std::streamsize>(n));
      TFM_CHECK(file_->good() && static_cast<uint64_t>(file_->gcount()) == n, source_, ": could not read tensor '",
                e.name, "' (", len, " bytes at offset ", data_start_ + e.begin,
                "): the file was truncated while open?");
    } else {
      std::memcpy(piece, bytes_.data() + data_start_ + e.begin + off, n);
    }
    if (sum) sum->update(piece, n);
    if (!dst) continue;
    const uint64_t first = off / e.element_bytes();  // the piece's first value
    if (widen) {
      float* out = reinterpret_cast<float*>(dst) + first;
      for (uint64_t i = 0; i < n / 2; ++i) {
        uint16_t h;
        std::memcpy(&h, piece + 2 * i, 2);
        out[i] = e.stored == Stored::kF16 ? half_to_float(h) : bf16_to_float(h);
      }
      piece = reinterpret_cast<char*>(out);
    }
    const uint64_t values = n / e.element_bytes();
    if (non_finite && !non_finite->empty()) continue;
    const int64_t bad = first_non_finite(piece, values * size_of(e.dtype), e.dtype);
    if (bad < 0) continue;
    const int64_t index = static_cast<int64_t>(first) + bad;
    std::string what = cat(source_, ": tensor '", e.name, "' holds ",
                           non_finite_name(piece + static_cast<size_t>(bad) * size_of(e.dtype), e.dtype), " at index ",
                           index, position(index, e.shape), " of its ", e.shape.numel(),
                           " values: a model file must hold finite numbers");
    if (!non_finite) throw Error(what);
    *non_finite = std::move(what);
  }
}

bool SafetensorsFile::read_tensors(const Destination& destination, bool verify) const {
  const bool check = verify && checksum_.has_value();
  Checksum sum;
  if (check) {
    const uint64_t n = header_.size();
    char len[8];
    std::memcpy(len, &n, 8);
    sum.update(len, 8);
    sum.update(header_.data(), checksum_at_);
    sum.update(std::string(kChecksumDigits, '0'));
    sum.update(std::string_view(header_).substr(checksum_at_ + kChecksumDigits));
  }
  // A non-finite value is reported after the checksum: in a file that does not match it, it is a
  // symptom of the damage, and the mismatch is the message that says so.
  std::string non_finite;
  for (const Entry& e : entries_) {
    const Tensor* dst = destination(e.name);
    if (dst) {
      readable(e.name);
      TFM_CHECK(dst->shape() == e.shape && dst->dtype() == e.dtype && dst->device() == Device::CPU, source_,
                ": tensor '", e.name, "' is ", tfm::name(e.dtype), " ", e.shape, ", cannot read it into ",
                tfm::name(dst->dtype()), " ", dst->shape());
      stream(e, static_cast<char*>(dst->raw()), check ? &sum : nullptr, &non_finite);
    } else if (check) {
      stream(e, nullptr, &sum, nullptr);
    }
  }
  if (check) {
    const uint64_t got = sum.value();
    TFM_CHECK(got == *checksum_, source_, ": checksum mismatch: the file records ", format_checksum(*checksum_),
              " but its contents hash to ", format_checksum(got), ": it was corrupted after it was written");
  }
  if (!non_finite.empty()) throw Error(non_finite);
  return check;
}

Shape SafetensorsFile::shape(const std::string& name) const { return entry(name).shape; }
DType SafetensorsFile::dtype(const std::string& name) const { return readable(name).dtype; }

}  // namespace tfm
