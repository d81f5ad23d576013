#include "ops/dispatch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "core/device.h"

namespace tfm::ops {

namespace {
struct OpTimes {
  std::mutex mutex;
  std::map<std::string, std::pair<double, int64_t>> totals;  // op → seconds, calls
  ~OpTimes() {
    if (totals.empty()) return;
    std::vector<std::pair<std::string, std::pair<double, int64_t>>> rows(totals.begin(), totals.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    double all = 0;
    for (const auto& r : rows) all += r.second.first;
    std::fprintf(stderr, "\nTFM_PROFILE: time per op (device idle before and after each call)\n");
    std::fprintf(stderr, "%-34s %10s %7s %10s\n", "op", "total ms", "share", "calls");
    for (const auto& [op, t] : rows)
      std::fprintf(stderr, "%-34s %10.1f %6.1f%% %10lld\n", op.c_str(), t.first * 1e3, 100 * t.first / all,
                   static_cast<long long>(t.second));
  }
};
OpTimes& op_times() {
  static OpTimes times;  // printed when the process exits
  return times;
}
}  // namespace

bool profiling() {
  static const bool on = [] {
    const char* v = std::getenv("TFM_PROFILE");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return on;
}

double profile_clock() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void record_op_time(const char* op, double seconds) {
  OpTimes& t = op_times();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto& [total, calls] = t.totals[op];
  total += seconds;
  ++calls;
}

cuda::Kernels& cuda_kernels(const char* op) {
  cuda::Kernels* k = cuda::kernels();
  TFM_CHECK(k != nullptr, op, ": no kernel for device 'cuda': ", builtin_device_absence(Device::CUDA));
  return *k;
}

cuda::Kernels& cuda_kernels(const char* op, DType dtype) {
  cuda::Kernels& k = cuda_kernels(op);
  TFM_CHECK(dtype == DType::F32, op, ": on cuda the tensors must be float32, got ", name(dtype));
  return k;
}

void check_all(const char* op, DType dtype, Device device,
               std::initializer_list<std::pair<const char*, const Tensor*>> tensors) {
  for (const auto& [tname, t] : tensors) {
    TFM_CHECK(t->dtype() == dtype, op, ": ", tname, " has dtype ", name(t->dtype()), ", expected ", name(dtype));
    TFM_CHECK(t->device() == device, op, ": ", tname, " is on ", name(t->device()), ", expected ", name(device));
  }
}

HostInts::HostInts(const Tensor& t) {
  if (t.device() == Device::CPU) {
    data_ = t.data<int32_t>();
    return;
  }
  copy_.resize(static_cast<size_t>(t.numel()));
  if (!copy_.empty()) Tensor::wrap(copy_.data(), t.shape(), DType::I32).copy_from(t);
  data_ = copy_.data();
}

}  // namespace tfm::ops
