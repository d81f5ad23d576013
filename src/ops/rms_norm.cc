// RMSNorm's checks and its dispatch to the CPU and CUDA kernels.
#include "ops/rms_norm.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

namespace {
void check_shapes(const char* op, const Tensor& x, const Tensor& gamma, const Tensor& rstd) {
  TFM_CHECK(x.rank() >= 1 && x.size(-1) > 0, op, ": input must have a non-empty last dim, got shape ", x.shape());
  const int64_t d = x.size(-1), rows = x.shape().rows();
  TFM_CHECK(gamma.rank() == 1 && gamma.size(0) == d, op, ": gamma has shape ", gamma.shape(), ", expected [", d, "]");
  TFM_CHECK(rstd.numel() == rows, op, ": rstd ", rstd.shape(), " must have ", rows, " elements (one per row of ",
            x.shape(), ")");
}
}  // namespace

void rms_norm(const Tensor& x, const Tensor& gamma, double eps, const Tensor& y, const Tensor& rstd) {
  check_shapes("rms_norm", x, gamma, rstd);
  TFM_CHECK(eps > 0, "rms_norm: eps must be positive, got ", eps);
  check_same_shape("rms_norm", "x", x, "y", y);
  check_all("rms_norm", x.dtype(), x.device(), {{"gamma", &gamma}, {"y", &y}, {"rstd", &rstd}});
  const int64_t rows = x.shape().rows(), d = x.size(-1);
  dispatch("rms_norm", x.dtype(), x.device(), [&](auto t) {
    using T = decltype(t);
    cpu::rms_norm<T>(rows, d, x.data<T>(), gamma.data<T>(), eps, y.data<T>(), rstd.data<T>());
  }, [&](cuda::Kernels& k) {
    k.rms_norm(rows, d, x.data<float>(), gamma.data<float>(), eps, y.data<float>(), rstd.data<float>());
  });
}

void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd, const Tensor& dx,
                       const Tensor& dgamma) {
  check_shapes("rms_norm_backward", x, gamma, rstd);
  check_same_shape("rms_norm_backward", "x", x, "dy", dy);
  check_same_shape("rms_norm_backward", "x", x, "dx", dx);
  check_same_shape("rms_norm_backward", "gamma", gamma, "dgamma", dgamma);
  check_all("rms_norm_backward", x.dtype(), x.device(),
            {{"dy", &dy}, {"gamma", &gamma}, {"rstd", &rstd}, {"dx", &dx}, {"dgamma", &dgamma}});
  const int64_t rows = x.shape().rows(), d = x.size(-1);
  dispatch("rms_norm_backward", x.dtype(), x.device(), [&](auto t) {
    using T = decltype(t);
    cpu::rms_norm_backward<T>(rows, d, dy.data<T>(), x.data<T>(), gamma.data<T>(), rstd.data<T>(), dx.data<T>(),
                              dgamma.data<T>());
  }, [&](cuda::Kernels& k) {
    k.rms_norm_backward(rows, d, dy.data<float>(), x.data<float>(), gamma.data<float>(), rstd.data<float>(),
                        dx.data<float>(), dgamma.data<float>());
  });
}

}  // namespace tfm::ops
