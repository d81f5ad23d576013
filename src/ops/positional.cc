#include "ops/positional.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"

namespace tfm::ops {

void positional_encoding(const Tensor& pe, int64_t start) {
  check_rank("positional_encoding", "pe", pe, 2);
  pe.zero();
  add_positional_encoding(pe.view({1, pe.size(0), pe.size(1)}), start);
}

void add_positional_encoding(const Tensor& x, int64_t start) {
  check_rank("add_positional_encoding", "x", x, 3);
  TFM_CHECK(start >= 0, "add_positional_encoding: start position must be >= 0, got ", start);
  dispatch("add_positional_encoding", x.dtype(), x.device(), [&](auto t) {
    using T = decltype(t);
    cpu::add_positional_encoding<T>(x.size(0), x.size(1), x.size(2), start, x.data<T>());
  });
}

}  // namespace tfm::ops
