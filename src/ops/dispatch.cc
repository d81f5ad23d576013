#include "ops/dispatch.h"

namespace tfm::ops {

cuda::Kernels& cuda_kernels(const char* op) {
  cuda::Kernels* k = cuda::kernels();
  TFM_CHECK(k != nullptr, op, ": no kernel for device 'cuda': this build has no CUDA backend, or this machine no ",
            "CUDA device (transformer info --cpu says which)");
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
