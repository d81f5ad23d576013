#pragma once
// Picks the kernel for a tensor's device and dtype. Op files validate their arguments, then call
// dispatch(op, dtype, device, [&](auto t) { cpu::kernel<decltype(t)>(...); }). The CPU is the only
// device so far; a CUDA backend adds its branch here and its kernels in ops/cuda/, and no layer
// code changes.
#include "core/tensor.h"

namespace tfm::ops {

template <class F>
void dispatch(const char* op, DType dtype, Device device, F&& kernel) {
  TFM_CHECK(device == Device::CPU, op, ": no kernel for device '", name(device), "' in this build");
  switch (dtype) {
    case DType::F32: kernel(float{}); return;
    case DType::F64: kernel(double{}); return;
    default: throw Error(cat(op, ": dtype ", name(dtype), " is not supported (float32 or float64)"));
  }
}

// Throws unless every tensor is on `device` with `dtype`; names the offending one.
void check_all(const char* op, DType dtype, Device device,
               std::initializer_list<std::pair<const char*, const Tensor*>> tensors);

}  // namespace tfm::ops
