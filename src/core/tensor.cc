#include "core/tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "core/device.h"

namespace tfm {

namespace {
constexpr size_t kAlignment = 64;  // one cache line; AVX-512 loads

// Blocks above glibc's largest mmap threshold (32 MiB; core/memory.h) come from mmap and go back to
// the kernel when freed, so one made anew at every decoding step, such as the [rows, vocabulary]
// logits of a large vocabulary (57 MiB for 256 rows × 58,101), costs a page fault and a page
// clearing per 4 KB, every step. Freed blocks of that size are kept here instead, a few at a time,
// and handed out again for requests of at least half their size: at most 4 blocks and 512 MiB in
// all (a block above that is freed at once).
//
// Medium blocks (1 to 32 MiB: a decoding step's activations, a training step's saved ones) come
// from their own anonymous mappings, kept the same way (at most 4,096 blocks and 2 GiB, as much as
// a training step frees and needs again at the next), not from glibc's heap. In the heap,
// the small objects that outlive a batch (its translations, built token by token) settled in the
// holes the batch's activations left, so the next batch's activations no longer fitted and the heap
// grew: translating 48 batches of 64 sentences in one chunk of input lines took the heap from 407 to
// 853 MB while the memory in use stayed below 350 MB (docs/performance.md). A mapping of its own
// cannot be split by anyone else.
constexpr size_t kMediumBlock = size_t{1} << 20;
constexpr size_t kLargeBlock = size_t{32} << 20;

class BlockCache {
 public:
  BlockCache(size_t max_blocks, size_t max_bytes, bool mapped)
      : max_blocks_(max_blocks), max_bytes_(max_bytes), mapped_(mapped) {}
  // The smallest kept block of at least `bytes`, if it is at most twice that; else nullptr.
  void* take(size_t bytes, size_t* capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = blocks_.lower_bound(bytes);
    if (it == blocks_.end() || it->first / 2 > bytes) return nullptr;
    void* p = it->second;
    *capacity = it->first;
    kept_ -= it->first;
    blocks_.erase(it);
    return p;
  }
  // A new block of `capacity` bytes (64-byte aligned), or nullptr.
  void* make(size_t capacity) const {
    if (!mapped_) return std::aligned_alloc(kAlignment, capacity);
    void* p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  // Keeps the block, dropping the largest kept ones while over the limits.
  void give(void* p, size_t capacity) {
    if (capacity > max_bytes_) return drop(p, capacity);
    std::vector<std::pair<size_t, void*>> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks_.emplace(capacity, p);
      kept_ += capacity;
      while (blocks_.size() > max_blocks_ || kept_ > max_bytes_) {
        const auto last = std::prev(blocks_.end());
        dropped.push_back(*last);
        kept_ -= last->first;
        blocks_.erase(last);
      }
    }
    for (const auto& [size, q] : dropped) drop(q, size);
  }

 private:
  void drop(void* p, size_t capacity) const {
    if (mapped_) munmap(p, capacity);
    else std::free(p);
  }
  const size_t max_blocks_, max_bytes_;
  const bool mapped_;
  std::mutex mutex_;
  std::multimap<size_t, void*> blocks_;  // by capacity
  size_t kept_ = 0;                      // their bytes
};

// Never destroyed: tensors may outlive static destructors.
BlockCache& large_blocks() {
  static auto* cache = new BlockCache(4, size_t{512} << 20, /*mapped=*/false);
  return *cache;
}
// Under AddressSanitizer the medium blocks come from aligned_alloc, where it sees overruns.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMapMediumBlocks = false;
#else
constexpr bool kMapMediumBlocks = true;
#endif
BlockCache& medium_blocks() {
  static auto* cache = new BlockCache(4096, size_t{2} << 30, kMapMediumBlocks);
  return *cache;
}

std::shared_ptr<void> allocate(size_t bytes, Device device) {
  if (device != Device::CPU) return require_device_memory(device, "allocate").allocate(std::max<size_t>(bytes, 1));
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < kMediumBlock) {
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) throw OutOfMemory(cat("out of memory allocating ", bytes, " bytes"));
    return std::shared_ptr<void>(p, std::free);
  }
  BlockCache& cache = rounded < kLargeBlock ? medium_blocks() : large_blocks();
  if (&cache == &medium_blocks()) rounded = (rounded + 4095) / 4096 * 4096;  // whole pages when mapped
  void* p = cache.take(rounded, &rounded);
  if (p == nullptr) p = cache.make(rounded);
  if (p == nullptr) throw OutOfMemory(cat("out of memory allocating ", bytes, " bytes"));
  return std::shared_ptr<void>(p, [&cache, rounded](void* q) { cache.give(q, rounded); });
}

// Large zero-filled buffers straight from the kernel (anonymous mmap: zero pages, page-aligned) take
// physical memory only where written. The gradient buffer of a model that only translates is never
// written, so it costs address space, not resident memory (a base model: 241 MB). Not for buffers
// made and freed often: each would fault in its pages anew.
constexpr size_t kMmapZerosMin = size_t{4} << 20;

std::shared_ptr<void> allocate_zeroed(size_t bytes, Device device) {
  if (device == Device::CPU && bytes >= kMmapZerosMin) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) return std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, bytes); });
  }
  std::shared_ptr<void> p = allocate(bytes, device);
  if (device == Device::CPU) std::memset(p.get(), 0, bytes);
  else require_device_memory(device, "zero").zero(p.get(), bytes);
  return p;
}
}  // namespace

Tensor Tensor::owning(std::shared_ptr<void> memory, Shape shape, DType dtype, Device device) {
  Tensor t;
  t.owner_ = std::move(memory);
  t.data_ = t.owner_.get();
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

Tensor Tensor::empty(Shape shape, DType dtype, Device device) {
  return owning(allocate(static_cast<size_t>(shape.numel()) * size_of(dtype), device), shape, dtype, device);
}

Tensor Tensor::zeros(Shape shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.zero();
  return t;
}

Tensor Tensor::zeros_on_demand(Shape shape, DType dtype, Device device) {
  return owning(allocate_zeroed(static_cast<size_t>(shape.numel()) * size_of(dtype), device), shape, dtype, device);
}

Tensor Tensor::wrap(void* data, Shape shape, DType dtype, Device device) {
  Tensor t;
  t.data_ = data;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

Tensor Tensor::view(Shape shape) const {
  TFM_CHECK(shape.numel() == numel(), "cannot view a tensor of shape ", shape_, " (", numel(),
            " elements) as shape ", shape, " (", shape.numel(), " elements)");
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t count) const {
  TFM_CHECK(rank() >= 1, "rows() of a scalar tensor");
  TFM_CHECK(begin >= 0 && count >= 0 && begin + count <= shape_[0], "rows [", begin, ", ", begin + count,
            ") out of range for a tensor of shape ", shape_);
  std::vector<int64_t> dims = shape_.to_vector();
  const int64_t row_elems = dims[0] == 0 ? 0 : numel() / dims[0];
  dims[0] = count;
  Tensor t = *this;
  t.shape_ = Shape(dims);
  t.data_ = static_cast<char*>(data_) + static_cast<size_t>(begin * row_elems) * size_of(dtype_);
  return t;
}

void Tensor::fill(double value) const {
  const int64_t n = numel();
  if (device_ != Device::CPU) {
    if (n > 0) require_device_memory(device_, "fill").fill(data_, dtype_, n, value);
    return;
  }
  switch (dtype_) {
    case DType::F32: std::fill_n(static_cast<float*>(data_), n, static_cast<float>(value)); break;
    case DType::F64: std::fill_n(static_cast<double*>(data_), n, value); break;
    case DType::I32: std::fill_n(static_cast<int32_t*>(data_), n, static_cast<int32_t>(value)); break;
    case DType::I8: std::fill_n(static_cast<int8_t*>(data_), n, static_cast<int8_t>(value)); break;
    case DType::BF16: std::fill_n(static_cast<Bf16*>(data_), n, Bf16::from_float(static_cast<float>(value))); break;
  }
}

void Tensor::zero() const {
  if (!bytes()) return;
  if (device_ == Device::CPU) std::memset(data_, 0, bytes());
  else require_device_memory(device_, "zero").zero(data_, bytes());
}

void Tensor::copy_from(const Tensor& src) const {
  check_same_shape("copy_from", "destination", *this, "source", src);
  check_dtype("copy_from", "source", src, dtype_);
  if (!bytes()) return;
  if (device_ == Device::CPU && src.device_ == Device::CPU) {
    std::memmove(data_, src.data_, bytes());
    return;
  }
  const Device other = device_ != Device::CPU ? device_ : src.device_;
  TFM_CHECK(device_ == Device::CPU || src.device_ == Device::CPU || device_ == src.device_, "copy_from() between ",
            name(src.device_), " and ", name(device_));
  require_device_memory(other, "copy_from").copy(data_, device_, src.data_, src.device_, bytes());
}

Tensor Tensor::to_device(Device device) const {
  Tensor t = empty(shape_, dtype_, device);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::on(Device device) const { return device_ == device ? *this : to_device(device); }

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device_);
  t.copy_from(*this);
  return t;
}

std::vector<double> Tensor::to_doubles() const {
  if (device_ != Device::CPU) return to_device(Device::CPU).to_doubles();
  std::vector<double> out(static_cast<size_t>(numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (dtype_) {
      case DType::F32: out[i] = static_cast<const float*>(data_)[i]; break;
      case DType::F64: out[i] = static_cast<const double*>(data_)[i]; break;
      case DType::I32: out[i] = static_cast<const int32_t*>(data_)[i]; break;
      case DType::I8: out[i] = static_cast<const int8_t*>(data_)[i]; break;
      case DType::BF16: out[i] = static_cast<const Bf16*>(data_)[i].to_float(); break;
    }
  }
  return out;
}

Tensor Tensor::to(DType dtype) const {
  TFM_CHECK(device_ == Device::CPU, "to(", name(dtype), ") of a ", name(device_),
            " tensor: convert on the CPU (to_device) first");
  Tensor t = empty(shape_, dtype, device_);
  const std::vector<double> v = to_doubles();
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype) {
      case DType::F32: t.data<float>()[i] = static_cast<float>(v[i]); break;
      case DType::F64: t.data<double>()[i] = v[i]; break;
      case DType::I32: t.data<int32_t>()[i] = static_cast<int32_t>(v[i]); break;
      case DType::I8: t.data<int8_t>()[i] = static_cast<int8_t>(v[i]); break;
      case DType::BF16: t.data<Bf16>()[i] = Bf16::from_float(static_cast<float>(v[i])); break;
    }
  }
  return t;
}

void check_same_shape(const char* op, const char* a_name, const Tensor& a, const char* b_name, const Tensor& b) {
  TFM_CHECK(a.shape() == b.shape(), op, ": ", a_name, " has shape ", a.shape(), " but ", b_name, " has shape ",
            b.shape());
}

void check_dtype(const char* op, const char* t_name, const Tensor& t, DType expected) {
  TFM_CHECK(t.dtype() == expected, op, ": ", t_name, " has dtype ", name(t.dtype()), ", expected ",
            name(expected));
}

void check_rank(const char* op, const char* t_name, const Tensor& t, int rank) {
  TFM_CHECK(t.rank() == rank, op, ": ", t_name, " must have rank ", rank, ", got shape ", t.shape());
}

}  // namespace tfm
