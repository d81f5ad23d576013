#include "core/device.h"

#include <array>
#include <atomic>

#include "core/error.h"

namespace tfm {
namespace {
std::array<std::atomic<DeviceMemory*>, 2>& backends() {
  static std::array<std::atomic<DeviceMemory*>, 2> all{};
  return all;
}
}  // namespace

void register_device_memory(Device device, DeviceMemory* memory) {
  TFM_CHECK(device != Device::CPU, "register_device_memory: the CPU's memory is the host's");
  backends()[static_cast<size_t>(device)].store(memory);
}

DeviceMemory* device_memory(Device device) {
  if (device == Device::CPU) return nullptr;
  if (DeviceMemory* registered = backends()[static_cast<size_t>(device)].load()) return registered;
  return builtin_device_memory(device);
}

DeviceMemory& require_device_memory(Device device, const char* what) {
  DeviceMemory* m = device_memory(device);
  TFM_CHECK(m != nullptr, what, " on device '", name(device), "': ", builtin_device_absence(device));
  return *m;
}

Device parse_device(std::string_view text, const char* what) {
  if (text == "cpu") return Device::CPU;
  if (text == "cuda" || text == "cuda:0") return Device::CUDA;
  throw Error(cat(what, " '", text, "' is not a device: cpu, or cuda (cuda:0)",
                  text.substr(0, 5) == "cuda:" ? "; only the first CUDA device, cuda:0, is used so far" : ""));
}

}  // namespace tfm
