#include "ops/dispatch.h"

namespace tfm::ops {

void check_all(const char* op, DType dtype, Device device,
               std::initializer_list<std::pair<const char*, const Tensor*>> tensors) {
  for (const auto& [tname, t] : tensors) {
    TFM_CHECK(t->dtype() == dtype, op, ": ", tname, " has dtype ", name(t->dtype()), ", expected ", name(dtype));
    TFM_CHECK(t->device() == device, op, ": ", tname, " is on ", name(t->device()), ", expected ", name(device));
  }
}

}  // namespace tfm::ops
