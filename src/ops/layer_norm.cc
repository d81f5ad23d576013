#include "ops/layer_norm.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

namespace {
void check_shapes(const char* op, const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                  const Tensor& rstd) {
  TFM_CHECK(x.rank() >= 1 && x.size(-1) > 0, op, ": input must have a non-empty last dim, got shape ", x.shape());
  const int64_t d = x.size(-1), rows = x.shape().rows();
  TFM_CHECK(gamma.rank() == 1 && gamma.size(0) == d, op, ": gamma has shape ", gamma.shape(), ", expected [", d, "]");
  TFM_CHECK(beta.rank() == 1 && beta.size(0) == d, op, ": beta has shape ", beta.shape(), ", expected [", d, "]");
  TFM_CHECK(mean.numel() == rows && rstd.numel() == rows, op, ": mean ", mean.shape(), " and rstd ", rstd.shape(),
            " must have ", rows, " elements (one per row of ", x.shape(), ")");
}
}  // namespace

void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& y,
                const Tensor& mean, const Tensor& rstd) {
  check_shapes("layer_norm", x, gamma, beta, mean, rstd);
  TFM_CHECK(eps > 0, "layer_norm: eps must be positive, got ", eps);
  check_same_shape("layer_norm", "x", x, "y", y);
  check_all("layer_norm", x.dtype(), x.device(),
            {{"gamma", &gamma}, {"beta", &beta}, {"y", &y}, {"mean", &mean}, {"rstd", &rstd}});
  dispatch("layer_norm", x.dtype(), x.device(), [&](auto t) {
    using T = decltype(t);
    cpu::layer_norm<T>(x.shape().rows(), x.size(-1), x.data<T>(), gamma.data<T>(), beta.data<T>(), eps, y.data<T>(),
                       mean.data<T>(), rstd.data<T>());
  }, [&](cuda::Kernels& k) {
    k.layer_norm(x.shape().rows(), x.size(-1), x.data<float>(), gamma.data<float>(), beta.data<float>(), eps,
                 y.data<float>(), mean.data<float>(), rstd.data<float>());
  });
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
  check_shapes("layer_norm_backward", x, gamma, dbeta, mean, rstd);
  check_same_shape("layer_norm_backward", "x", x, "dy", dy);
  check_same_shape("layer_norm_backward", "x", x, "dx", dx);
  check_same_shape("layer_norm_backward", "gamma", gamma, "dgamma", dgamma);
  check_all("layer_norm_backward", x.dtype(), x.device(),
            {{"dy", &dy}, {"gamma", &gamma}, {"mean", &mean}, {"rstd", &rstd}, {"dx", &dx}, {"dgamma", &dgamma},
             {"dbeta", &dbeta}});
  dispatch("layer_norm_backward", x.dtype(), x.device(), [&](auto t) {
    using T = decltype(t);
    cpu::layer_norm_backward<T>(x.shape().rows(), x.size(-1), dy.data<T>(), x.data<T>(), gamma.data<T>(),
                                mean.data<T>(), rstd.data<T>(), dx.data<T>(), dgamma.data<T>(), dbeta.data<T>());
  }, [&](cuda::Kernels& k) {
    k.layer_norm_backward(x.shape().rows(), x.size(-1), dy.data<float>(), x.data<float>(), gamma.data<float>(),
                          mean.data<float>(), rstd.data<float>(), dx.data<float>(), dgamma.data<float>(),
                          dbeta.data<float>());
  });
}

}  // namespace tfm::ops
