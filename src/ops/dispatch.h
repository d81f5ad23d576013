#pragma once
// Picks the kernel for a tensor's device and dtype. Op files validate their arguments, then call
//   dispatch(op, dtype, device, [&](auto t) { cpu::kernel<decltype(t)>(...); },
//            [&](cuda::Kernels& k) { k.kernel(...); });
// The CUDA branch takes float32 tensors and runs the build's CUDA kernels (ops/cuda/kernels.h);
// an op without one (the single-lambda form) refuses CUDA tensors, naming the op. No layer code
// sees a device.
#include <vector>

#include "core/tensor.h"
#include "ops/cuda/kernels.h"

namespace tfm::ops {

// TFM_PROFILE=1 in the environment: every op call that goes through dispatch() is timed, the
// device made idle before and after it (which slows the run: for finding where time goes, not for
// speed figures), and a table of the totals per op is printed to stderr at exit. An op that calls
// another (add_positional_encoding calls bias_add) counts it in its own time too.
bool profiling();
void record_op_time(const char* op, double seconds);
double profile_clock();  // seconds, monotonic

template <class F>
void dispatch(const char* op, DType dtype, Device device, F&& kernel) {
  TFM_CHECK(device == Device::CPU, op, ": no kernel for device '", name(device), "' in this build");
  auto run = [&] {
    switch (dtype) {
      case DType::F32: kernel(float{}); return;
      case DType::F64: kernel(double{}); return;
      default: throw Error(cat(op, ": dtype ", name(dtype), " is not supported (float32 or float64)"));
    }
  };
  if (!profiling()) return run();
  const double t0 = profile_clock();
  run();
  record_op_time(op, profile_clock() - t0);
}

// The build's CUDA kernels; throws, naming `op`, when there are none (no CUDA in the build or no
// CUDA device here) or `dtype` is not float32.
cuda::Kernels& cuda_kernels(const char* op, DType dtype);
cuda::Kernels& cuda_kernels(const char* op);  // for byte moves, any dtype

template <class F, class G>
void dispatch(const char* op, DType dtype, Device device, F&& cpu_kernel, G&& cuda_kernel) {
  if (device == Device::CUDA) {
    cuda::Kernels& k = cuda_kernels(op, dtype);
    if (!profiling()) return cuda_kernel(k);
    k.synchronize();
    const double t0 = profile_clock();
    cuda_kernel(k);
    k.synchronize();
    record_op_time(op, profile_clock() - t0);
    return;
  }
  dispatch(op, dtype, device, cpu_kernel);
}

// `t` where a kernel on `device` reads it: itself when it is there, else a copy (the small int32
// tensors of ids, lengths and targets that callers build on the host).
inline Tensor on_device(const Tensor& t, Device device) {
  return t.defined() ? t.on(device) : t;
}

// Throws unless every tensor is on `device` with `dtype`; names the offending one.
void check_all(const char* op, DType dtype, Device device,
               std::initializer_list<std::pair<const char*, const Tensor*>> tensors);

// An int32 tensor's values where the host can read them (an op's checks of ids, lengths and
// targets): the tensor's own memory on the CPU, a copy of it from any other device.
class HostInts {
 public:
  explicit HostInts(const Tensor& t);
  HostInts(HostInts&&) = default;  // data_ stays valid: a moved vector keeps its buffer
  HostInts(const HostInts&) = delete;
  HostInts& operator=(const HostInts&) = delete;
  const int32_t* data() const { return data_; }
  int32_t operator[](int64_t i) const { return data_[i]; }

 private:
  std::vector<int32_t> copy_;
  const int32_t* data_ = nullptr;
};

}  // namespace tfm::ops
