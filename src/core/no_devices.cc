// builtin_device_memory() of a build without a device backend (no nvcc: TFM_CUDA): none.
#include "core/device.h"

namespace tfm {

DeviceMemory* builtin_device_memory(Device) { return nullptr; }

}  // namespace tfm
