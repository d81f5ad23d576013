// The CUDA device's memory for tensors (core/device.h): a caching allocator over
// cudaMalloc, zeroing, filling and copies. Compiled when the build finds nvcc (TFM_CUDA); a machine
// without a GPU (or without a driver) gets no backend, and CUDA tensors are refused saying so.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/error.h"

namespace tfm {
namespace {

void check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  throw Error(cat("CUDA: ", what, " failed: ", cudaGetErrorString(rc), " (", static_cast<int>(rc), ")"));
}

template <class T>
__global__ void fill_kernel(T* data, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    data[i] = value;
}

template <class T>
void fill_n(void* data, int64_t n, double value) {
  if (n <= 0) return;
  const int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((n + threads - 1) / threads, 65535));
  fill_kernel<T><<<blocks, threads>>>(static_cast<T*>(data), n, static_cast<T>(value));
  check(cudaGetLastError(), "fill");
}

// Small copies from the host (a decoding step's tokens, lengths and cache rows; indices) without
// waiting for the device: cudaMemcpy from pageable memory first waits for all queued work, so each
// such copy made the host idle until the GPU was, and the GPU idle while the host then queued the
// next kernels. Here the bytes go to a ring of pinned memory at once, and an asynchronous copy on
// the default stream (the one every kernel runs on) moves them after the work queued before it and
// before the work queued after it. A region of the ring is written again only after the event
// recorded behind its copy has passed.
class StagedUploads {
 public:
  static constexpr size_t kLargest = size_t{256} << 10, kRing = size_t{8} << 20, kTracked = 1024;

  void copy(void* dst, const void* src, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ring_ == nullptr && !unavailable_) {
      void* p = nullptr;
      if (cudaHostAlloc(&p, kRing, cudaHostAllocDefault) == cudaSuccess) {
        ring_ = static_cast<char*>(p);
      } else {
        (void)cudaGetLastError();
        unavailable_ = true;  // no pinned memory to be had: every copy waits, as before
      }
    }
    if (ring_ == nullptr) {
      check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
      return;
    }
    // The copies done by now give their regions back (the list stays as long as the queue ahead of
    // the device, not the ring's 32,768 smallest regions); at most kTracked stay listed.
    while (!in_flight_.empty()) {
      const cudaError_t rc = in_flight_.size() > kTracked ? cudaEventSynchronize(in_flight_.front().done)
                                                          : cudaEventQuery(in_flight_.front().done);
      if (rc == cudaErrorNotReady) break;
      check(rc, "cudaEventQuery (upload ring)");
      spare_.push_back(in_flight_.front().done);
      in_flight_.pop_front();
    }
    const size_t size = (bytes + 255) / 256 * 256;
    if (head_ + size > kRing) head_ = 0;
    const size_t begin = head_, end = head_ + size;
    // Copies complete in queue order: waiting for the newest one that overlaps frees all before it.
    size_t last = in_flight_.size();
    for (size_t i = 0; i < in_flight_.size(); ++i)
      if (in_flight_[i].begin < end && begin < in_flight_[i].end) last = i;
    if (last < in_flight_.size()) {
      check(cudaEventSynchronize(in_flight_[last].done), "cudaEventSynchronize (upload ring)");
      for (size_t i = 0; i <= last; ++i) spare_.push_back(in_flight_[i].done);
      in_flight_.erase(in_flight_.begin(), in_flight_.begin() + static_cast<std::ptrdiff_t>(last) + 1);
    }
    std::memcpy(ring_ + begin, src, bytes);
    check(cudaMemcpyAsync(dst, ring_ + begin, bytes, cudaMemcpyHostToDevice, 0), "cudaMemcpyAsync (upload)");
    cudaEvent_t done = nullptr;
    if (spare_.empty()) {
      check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate (upload ring)");
    } else {
      done = spare_.back();
      spare_.pop_back();
    }
    check(cudaEventRecord(done, 0), "cudaEventRecord (upload ring)");
    in_flight_.push_back({begin, end, done});
    head_ = end;
  }

 private:
  struct Staged {
    size_t begin, end;
    cudaEvent_t done;
  };
  std::mutex mutex_;
  char* ring_ = nullptr;
  bool unavailable_ = false;
  size_t head_ = 0;
  std::deque<Staged> in_flight_;
  std::vector<cudaEvent_t> spare_;
};

// Freed blocks are kept by size (rounded up: 512 bytes below 1 MiB, 2 MiB steps above) and handed
// out again for the same rounded size; cudaMalloc and cudaFree synchronize the device, and training
// makes and frees the same sizes at every step. When cudaMalloc fails, the kept blocks are freed
// and it is tried once more.
class CudaMemory final : public DeviceMemory {
 public:
  // `device`: the one select_device() chose (cudaSetDevice), else 0.
  explicit CudaMemory(int device) {
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    int runtime = 0;
    check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
    description_ = cat(p.name, ", ", p.totalGlobalMem >> 20, " MiB, compute capability ", p.major, ".", p.minor,
                       ", CUDA runtime ", runtime / 1000, ".", runtime % 1000 / 10);
  }

  std::shared_ptr<void> allocate(size_t bytes) override {
    const size_t size = rounded(bytes);
    void* p = take(size);
    if (p == nullptr) {
      if (cudaMalloc(&p, size) != cudaSuccess) {
        (void)cudaGetLastError();  // clear the error, free what is kept, try once more
        release_kept();
        check(cudaMalloc(&p, size),
              cat("cudaMalloc of ", size, " bytes (out of GPU memory? smaller batches: --batch-tokens)").c_str());
      }
    }
    return std::shared_ptr<void>(p, [this, size](void* q) { give(q, size); });
  }
  void zero(void* data, size_t bytes) override { check(cudaMemset(data, 0, bytes), "cudaMemset"); }
  void fill(void* data, DType dtype, int64_t n, double value) override {
    switch (dtype) {
      case DType::F32: return fill_n<float>(data, n, value);
      case DType::F64: return fill_n<double>(data, n, value);
      case DType::I32: return fill_n<int32_t>(data, n, value);
      case DType::I8: return fill_n<int8_t>(data, n, value);
      case DType::BF16: return fill_n<uint16_t>(data, n, Bf16::from_float(static_cast<float>(value)).bits);
    }
  }
  void copy(void* dst, Device to, const void* src, Device from, size_t bytes) override {
    const cudaMemcpyKind kind = from == Device::CPU ? cudaMemcpyHostToDevice
                                : to == Device::CPU ? cudaMemcpyDeviceToHost
                                                    : cudaMemcpyDeviceToDevice;
    if (kind == cudaMemcpyHostToDevice && bytes <= StagedUploads::kLargest) {
      uploads_->copy(dst, src, bytes);  // the host's bytes are taken; the device's follow in queue order
      return;
    }
    // Synchronous: the bytes are there on return (from the host: after all queued work).
    check(cudaMemcpy(dst, src, bytes, kind), "cudaMemcpy");
  }
  std::string describe() const override { return description_; }
  int64_t available_bytes() override {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [size, p] : kept_) free += size;
    return static_cast<int64_t>(free);
  }

 private:
  static size_t rounded(size_t bytes) {
    constexpr size_t kSmall = size_t{1} << 20, kSmallStep = 512, kLargeStep = size_t{2} << 20;
    const size_t step = bytes < kSmall ? kSmallStep : kLargeStep;
    return (std::max<size_t>(bytes, 1) + step - 1) / step * step;
  }
  void* take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = kept_.find(size);
    if (it == kept_.end()) return nullptr;
    void* p = it->second;
    kept_.erase(it);
    return p;
  }
  void give(void* p, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    kept_.emplace(size, p);
  }
  void release_kept() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [size, p] : kept_) (void)cudaFree(p);
    kept_.clear();
  }

  std::string description_;
  StagedUploads* uploads_ = new StagedUploads;
  std::mutex mutex_;
  std::multimap<size_t, void*> kept_;
};

struct Found {
  DeviceMemory* memory = nullptr;
  std::string absence;  // why there is none
};

// The device select_device() chose, or 0 once the backend was made without a choice (-1 before).
std::atomic<int> chosen{-1};

// cudaGetDeviceCount's count, or its error in words.
int count_devices(std::string* absence) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    if (absence) *absence = cat("no CUDA device found (", cudaGetErrorString(rc), ")");
    return 0;
  }
  if (count == 0 && absence) *absence = "no CUDA device found";
  return count;
}

// Made on first use and never destroyed (tensors may outlive static destructors); none when the
// machine has no CUDA device or no driver (cudaGetDeviceCount then fails, saying which).
const Found& found() {
  static const Found f = [] {
    std::string absence;
    if (count_devices(&absence) == 0) return Found{nullptr, absence};
    int expected = -1;
    chosen.compare_exchange_strong(expected, 0);  // no select_device() before: device 0, for good
    return Found{new CudaMemory(chosen.load()), std::string()};
  }();
  return f;
}
}  // namespace

DeviceMemory* builtin_device_memory(Device device) { return device == Device::CUDA ? found().memory : nullptr; }

int device_count(Device device) { return device == Device::CUDA ? count_devices(nullptr) : 0; }

void select_device(Device device, int index) {
  TFM_CHECK(device == Device::CUDA, "select_device: ", name(device), " has no numbered devices");
  std::string absence;
  const int count = count_devices(&absence);
  TFM_CHECK(count > 0, "cannot use CUDA device ", index, ": ", absence);
  TFM_CHECK(index >= 0 && index < count, "no CUDA device ", index, ": this machine has ", count,
            count == 1 ? " (device 0)" : cat(" (devices 0 to ", count - 1, ")"));
  int expected = -1;
  if (!chosen.compare_exchange_strong(expected, index))
    TFM_CHECK(expected == index, "CUDA device ", index, " chosen after device ", expected,
              " was already in use by this process");
  check(cudaSetDevice(index), "cudaSetDevice");
}

std::string builtin_device_absence(Device device) {
  if (device != Device::CUDA) return cat("no backend for ", name(device));
  return found().absence;
}

}  // namespace tfm
