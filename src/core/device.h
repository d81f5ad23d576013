#pragma once
// Memory on a device other than the CPU, as tensors need it: allocation, zeroing, filling and
// copies in either direction. The build's backend (the CUDA one, ops/cuda, when the build
// has it) is found at link time, and a test may register another; core/ never includes a device's
// headers. Without a backend, a tensor on that device is refused with an error that says so.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace tfm {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // `bytes` of device memory (at least 1), freed by the pointer's deleter.
  virtual std::shared_ptr<void> allocate(size_t bytes) = 0;
  virtual void zero(void* data, size_t bytes) = 0;
  // `n` elements of `dtype` at `data` set to `value` (converted to the dtype).
  virtual void fill(void* data, DType dtype, int64_t n, double value) = 0;
  // `bytes` from `src` on `from` to `dst` on `to`; at least one of the two is this device.
  // Returns once the bytes are at `dst` (a copy to the host can be read at once).
  virtual void copy(void* dst, Device to, const void* src, Device from, size_t bytes) = 0;
  // The device in words ("NVIDIA H100 80GB HBM3, CUDA 13.0").
  virtual std::string describe() const = 0;
  // Bytes that allocations could still get now (the device's free memory and the blocks a caching
  // allocator keeps for reuse), or 0 when that is not known.
  virtual int64_t available_bytes() { return 0; }
};

// Registers (or, with nullptr, removes) the backend of `device`, in place of the build's own; not
// for Device::CPU.
void register_device_memory(Device device, DeviceMemory* memory);
// The build's own backend of `device`, or nullptr: ops/cuda/memory.cu when the build has CUDA and
// the machine a CUDA device, ops/cuda/none.cc otherwise.
DeviceMemory* builtin_device_memory(Device device);
// Why the build's own backend of `device` is missing, in words ("this build has no CUDA backend",
// "no CUDA device: CUDA driver version is insufficient for CUDA runtime version"); "" when present.
std::string builtin_device_absence(Device device);
// The backend of `device` (the registered one, else the build's own), or nullptr.
DeviceMemory* device_memory(Device device);
// The backend of `device`; throws, naming the device and `what` needed it, when there is none.
DeviceMemory& require_device_memory(Device device, const char* what);

// Makes the `index`-th device of `device`'s kind (0, 1, …; CUDA's numbering) the one where this
// process's tensors of that kind live: data-parallel training gives each rank of a machine its own
// GPU. Call it before anything runs there; the host thread that calls it (CUDA's current device is
// per thread) is the one that runs the device's work. Throws, naming the index and the devices
// found, when there is no such device; a later call with another index is refused.
void select_device(Device device, int index);
// How many devices of `device`'s kind the build's backend finds (0 without one).
int device_count(Device device);

// The device a user names: "cpu", or "cuda" / "cuda:0" (the first CUDA device; the only one used
// so far). Throws, naming `what` and the text, on anything else.
Device parse_device(std::string_view text, const char* what);

}  // namespace tfm
