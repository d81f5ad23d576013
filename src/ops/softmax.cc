#include "ops/softmax.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

void softmax(const Tensor& x, const Tensor& y) {
  check_same_shape("softmax", "x", x, "y", y);
  TFM_CHECK(x.rank() >= 1 && x.size(-1) > 0, "softmax: input must have a non-empty last dim, got shape ", x.shape());
  check_all("softmax", x.dtype(), x.device(), {{"y", &y}});
  dispatch("softmax", x.dtype(), x.device(), [&](auto t) {
    using T = decltype(t);
    cpu::softmax<T>(x.shape().rows(), x.size(-1), x.data<T>(), y.data<T>());
  }, [&](cuda::Kernels& k) { k.softmax(x.shape().rows(), x.size(-1), x.data<float>(), y.data<float>()); });
}

void softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  check_same_shape("softmax_backward", "y", y, "dy", dy);
  check_same_shape("softmax_backward", "y", y, "dx", dx);
  TFM_CHECK(y.rank() >= 1, "softmax_backward: output must have rank >= 1");
  check_all("softmax_backward", y.dtype(), y.device(), {{"dy", &dy}, {"dx", &dx}});
  dispatch("softmax_backward", y.dtype(), y.device(), [&](auto t) {
    using T = decltype(t);
    cpu::softmax_backward<T>(y.shape().rows(), y.size(-1), y.data<T>(), dy.data<T>(), dx.data<T>());
  }, [&](cuda::Kernels& k) {
    k.softmax_backward(y.shape().rows(), y.size(-1), y.data<float>(), dy.data<float>(), dx.data<float>());
  });
}

}  // namespace tfm::ops
