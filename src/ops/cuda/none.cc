// A build without the CUDA backend (no nvcc, or TFM_CUDA=OFF): no device memory and no kernels, so
// CUDA tensors and ops are refused with an error that says so.
#include "core/device.h"
#include "core/error.h"
#include "ops/cuda/kernels.h"

namespace tfm {

DeviceMemory* builtin_device_memory(Device) { return nullptr; }

std::string builtin_device_absence(Device device) {
  return cat("this build has no backend for ", name(device),
             " (configured without the CUDA compiler nvcc, or with TFM_CUDA=OFF)");
}

void select_device(Device device, int index) {
  throw Error(cat("cannot use ", name(device), " device ", index, ": ", builtin_device_absence(device)));
}

int device_count(Device) { return 0; }

namespace cuda {
Kernels* kernels() { return nullptr; }
}  // namespace cuda

}  // namespace tfm
