#include "ops/adam.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

void adam_step(const Tensor& params, const Tensor& grads, const Tensor& m, const Tensor& v, const AdamArgs& args) {
  TFM_CHECK(grads.numel() == params.numel() && m.numel() == params.numel() && v.numel() == params.numel(),
            "adam_step: params ", params.shape(), ", grads ", grads.shape(), ", m ", m.shape(), " and v ", v.shape(),
            " must have the same number of elements");
  TFM_CHECK(args.step >= 1, "adam_step: step must be >= 1, got ", args.step);
  TFM_CHECK(args.beta1 >= 0 && args.beta1 < 1 && args.beta2 >= 0 && args.beta2 < 1, "adam_step: betas must be in [0, 1), got ",
            args.beta1, " and ", args.beta2);
  TFM_CHECK(args.eps > 0, "adam_step: eps must be positive, got ", args.eps);
  check_all("adam_step", params.dtype(), params.device(), {{"grads", &grads}, {"m", &m}, {"v", &v}});
  dispatch("adam_step", params.dtype(), params.device(), [&](auto t) {
    using T = decltype(t);
    cpu::adam_step<T>(params.numel(), params.data<T>(), grads.data<T>(), m.data<T>(), v.data<T>(), args.lr,
                      args.beta1, args.beta2, args.eps, args.step);
  }, [&](cuda::Kernels& k) {
    k.adam_step(params.numel(), params.data<float>(), grads.data<float>(), m.data<float>(), v.data<float>(), args.lr,
                args.beta1, args.beta2, args.eps, args.step);
  });
}

}  // namespace tfm::ops
