#pragma once
// The CUDA backend against the CPU: every op on the same inputs on both devices, float32
// within 1e-5 of the CPU's result (relative to the tensor's largest value), dropout masks
// bit-identical, bf16 products against the CPU's definition (bf16-rounded inputs, float32 sums);
// then the whole model's logits, loss and every gradient, and a few Adam steps.
//
// Compiled in every build; where the build has no CUDA backend or the machine no GPU, each test is
// skipped with a message, or fails when TFM_REQUIRE_GPU=1 (the GPU machine's check, scripts/gpu-check.sh).
//
// This header holds what the cuda_test program's files share: REQUIRE_GPU, the GPU device, random
// float32 inputs, and the comparisons of a GPU tensor with the CPU's (within a tolerance, bit for bit).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "ops/cuda/kernels.h"
#include "testing/gradcheck.h"

namespace tfm {

#define REQUIRE_GPU()                                                                                   \
  do {                                                                                                  \
    if (cuda::kernels() == nullptr) {                                                                   \
      const char* require = std::getenv("TFM_REQUIRE_GPU");                                             \
      if (require != nullptr && std::strcmp(require, "1") == 0)                                         \
        FAIL() << "TFM_REQUIRE_GPU=1, but " << builtin_device_absence(Device::CUDA);                      \
      GTEST_SKIP() << builtin_device_absence(Device::CUDA);                                             \
    }                                                                                                   \
  } while (false)

inline constexpr Device kGpu = Device::CUDA;

inline Tensor random(Shape shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return testing::random_tensor(std::move(shape), seed, lo, hi).to(DType::F32);
}
inline Tensor on_gpu(const Tensor& t) { return t.to_device(kGpu); }

// max |cpu − gpu| ≤ tol · max(max |cpu|, floor), reported with the worst element. Returns that
// error over max(max |cpu|, floor).
inline double expect_close(const Tensor& cpu, const Tensor& gpu, const std::string& what, double tol = 1e-5,
                           double floor = 1e-30) {
  EXPECT_EQ(cpu.shape(), gpu.shape()) << what;
  if (cpu.shape() != gpu.shape()) return INFINITY;
  const std::vector<double> a = cpu.to_doubles(), b = gpu.to_doubles();
  double largest = floor, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    largest = std::max(largest, std::abs(a[i]));
    const double e = std::abs(a[i] - b[i]);
    if (!(e <= worst)) {  // NaN counts as worst
      worst = e;
      at = i;
    }
  }
  EXPECT_LE(worst, tol * largest) << what << ": element " << at << " is " << (a.empty() ? 0 : a[at]) << " on the cpu, "
                                  << (b.empty() ? 0 : b[at]) << " on cuda (largest |value| " << largest << ")";
  return worst / largest;
}

inline void expect_identical(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  const Tensor back = gpu.to_device(Device::CPU);
  EXPECT_EQ(std::memcmp(cpu.raw(), back.raw(), cpu.bytes()), 0) << what << ": not bit-identical";
}

}  // namespace tfm
