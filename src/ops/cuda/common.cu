// The out-of-line parts of common.cuh: the error check, whose message needs core/error.h, and the
// kernels' scratch memory, which needs core/device.h.
#include "ops/cuda/common.cuh"

#include "core/device.h"
#include "core/error.h"

namespace tfm::cuda {

void check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  // Kernels run after their launch returns: a fault inside one is reported by a later call.
  const bool earlier = rc == cudaErrorIllegalAddress || rc == cudaErrorLaunchFailure ||
                       rc == cudaErrorMisalignedAddress || rc == cudaErrorIllegalInstruction;
  throw Error(cat("CUDA: ", what, " failed: ", cudaGetErrorString(rc), " (", static_cast<int>(rc), ")",
                  earlier ? "; the fault may come from an earlier kernel (run with compute-sanitizer to find it)"
                          : ""));

}

std::shared_ptr<void> scratch(size_t bytes) {
  return require_device_memory(Device::CUDA, "CUDA scratch memory").allocate(bytes);

}

}  // namespace tfm::cuda
