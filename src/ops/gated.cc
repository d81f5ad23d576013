// The gated activation's checks and its dispatch to the CPU and CUDA kernels.
#include "ops/gated.h"

#include <vector>

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

namespace {
// F, after checking that pre is [N, 2F] and `half` [N, F] (same leading dims).
int64_t check_halves(const char* op, const Tensor& pre, const char* half_name, const Tensor& half) {
  TFM_CHECK(pre.rank() >= 1 && pre.size(-1) > 0 && pre.size(-1) % 2 == 0, op,
            ": pre must have an even, non-empty last dim (the gate's F columns, then the up part's F), got shape ",
            pre.shape());
  const int64_t f = pre.size(-1) / 2;
  std::vector<int64_t> want = pre.shape().to_vector();
  want.back() = f;
  TFM_CHECK(half.shape() == Shape(want), op, ": ", half_name, " has shape ", half.shape(), ", expected ", Shape(want),
            " (pre ", pre.shape(), " with half its last dim)");
  return f;
}
}  // namespace

void gated(const Tensor& pre, Activation act, const Tensor& hidden) {
  const int64_t f = check_halves("gated", pre, "hidden", hidden);
  check_all("gated", pre.dtype(), pre.device(), {{"hidden", &hidden}});
  const int64_t rows = pre.shape().rows();
  dispatch("gated", pre.dtype(), pre.device(), [&](auto t) {
    using T = decltype(t);
    cpu::gated<T>(rows, f, act, pre.data<T>(), hidden.data<T>());
  }, [&](cuda::Kernels& k) { k.gated(rows, f, act, pre.data<float>(), hidden.data<float>()); });
}

void gated_backward(const Tensor& dhidden, const Tensor& pre, Activation act, const Tensor& dpre) {
  const int64_t f = check_halves("gated_backward", pre, "dhidden", dhidden);
  check_same_shape("gated_backward", "pre", pre, "dpre", dpre);
  check_all("gated_backward", pre.dtype(), pre.device(), {{"dhidden", &dhidden}, {"dpre", &dpre}});
  const int64_t rows = pre.shape().rows();
  dispatch("gated_backward", pre.dtype(), pre.device(), [&](auto t) {
    using T = decltype(t);
    cpu::gated_backward<T>(rows, f, act, dhidden.data<T>(), pre.data<T>(), dpre.data<T>());
  }, [&](cuda::Kernels& k) {
    k.gated_backward(rows, f, act, dhidden.data<float>(), pre.data<float>(), dpre.data<float>());
  });
}

}  // namespace tfm::ops
