#include "ops/loss.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

namespace {
// Returns the targets as the host reads them.
HostInts check_args(const char* op, const Tensor& logits, const Tensor& targets, const LossArgs& args,
                    const Tensor& lse) {
  check_rank(op, "logits", logits, 2);
  check_dtype(op, "targets", targets, DType::I32);
  const int64_t n = logits.size(0), v = logits.size(1);
  TFM_CHECK(v > 0, op, ": logits ", logits.shape(), " have an empty vocabulary");
  TFM_CHECK(targets.numel() == n, op, ": ", targets.numel(), " targets for ", n, " rows of logits");
  TFM_CHECK(lse.numel() == n, op, ": lse has ", lse.numel(), " elements for ", n, " rows");
  TFM_CHECK(args.smoothing >= 0 && args.smoothing <= 1, op, ": label smoothing must be in [0, 1], got ",
            args.smoothing);
  HostInts y(targets);
  for (int64_t i = 0; i < n; ++i)
    TFM_CHECK(y[i] == args.ignore_index || (y[i] >= 0 && y[i] < v), op, ": target ", y[i], " in row ", i,
              " is outside the vocabulary [0, ", v, ") and is not the ignore index ", args.ignore_index);
  return y;
}
}  // namespace

LossSum cross_entropy(const Tensor& logits, const Tensor& targets, const LossArgs& args, const Tensor& lse) {
  const HostInts y = check_args("cross_entropy", logits, targets, args, lse);
  check_all("cross_entropy", logits.dtype(), logits.device(), {{"lse", &lse}});
  LossSum result;
  for (int64_t i = 0; i < targets.numel(); ++i) result.tokens += y[i] != args.ignore_index;
  dispatch("cross_entropy", logits.dtype(), logits.device(), [&](auto t) {
    using T = decltype(t);
    result.loss = cpu::cross_entropy<T>(logits.size(0), logits.size(1), logits.data<T>(), y.data(), args.smoothing,
                                        args.ignore_index, lse.data<T>());
  }, [&](cuda::Kernels& k) {
    result.loss = k.cross_entropy(logits.size(0), logits.size(1), logits.data<float>(),
                                  on_device(targets, Device::CUDA).data<int32_t>(),
                                  args.smoothing, args.ignore_index, lse.data<float>());
  });
  return result;
}

namespace {
// dst += (accumulate) or = the gradient; dst may be the logits themselves when overwriting.
void backward_into(const char* op, const Tensor& logits, const Tensor& targets, const Tensor& lse, const LossArgs& args,
                   double dloss, const Tensor& dst, bool accumulate) {
  check_args(op, logits, targets, args, lse);
  check_same_shape(op, "logits", logits, "dlogits", dst);
  check_all(op, logits.dtype(), logits.device(), {{"lse", &lse}, {"dlogits", &dst}});
  dispatch(op, logits.dtype(), logits.device(), [&](auto t) {
    using T = decltype(t);
    cpu::cross_entropy_backward<T>(logits.size(0), logits.size(1), logits.data<T>(), targets.data<int32_t>(),
                                   lse.data<T>(), args.smoothing, args.ignore_index, dloss, dst.data<T>(), accumulate);
  }, [&](cuda::Kernels& k) {
    k.cross_entropy_backward(logits.size(0), logits.size(1), logits.data<float>(),
                             on_device(targets, Device::CUDA).data<int32_t>(),
                             lse.data<float>(), args.smoothing, args.ignore_index, dloss, dst.data<float>(), accumulate);
  });
}
}  // namespace

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const LossArgs& args,
                            double dloss, const Tensor& dlogits) {
  backward_into("cross_entropy_backward", logits, targets, lse, args, dloss, dlogits, true);
}

void cross_entropy_backward_in_place(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                     const LossArgs& args, double dloss) {
  backward_into("cross_entropy_backward_in_place", logits, targets, lse, args, dloss, logits, false);
}

void cross_entropy_backward_bf16(const Tensor& logits, const Tensor& targets, const Tensor& lse, const LossArgs& args,
                                 double dloss, const Tensor& dlogits16) {
  const char* op = "cross_entropy_backward_bf16";
  check_args(op, logits, targets, args, lse);
  check_same_shape(op, "logits", logits, "dlogits", dlogits16);
  check_dtype(op, "logits", logits, DType::F32);
  check_all(op, DType::F32, logits.device(), {{"lse", &lse}});
  check_all(op, DType::BF16, logits.device(), {{"dlogits", &dlogits16}});
  auto* out = dlogits16.raw();
  dispatch(op, logits.dtype(), logits.device(), [&](auto) {
    cpu::cross_entropy_backward_bf16(logits.size(0), logits.size(1), logits.data<float>(), targets.data<int32_t>(),
                                     lse.data<float>(), args.smoothing, args.ignore_index, dloss,
                                     static_cast<uint16_t*>(out));
  }, [&](cuda::Kernels& k) {
    k.cross_entropy_backward_bf16(logits.size(0), logits.size(1), logits.data<float>(),
                                  on_device(targets, Device::CUDA).data<int32_t>(), lse.data<float>(), args.smoothing,
                                  args.ignore_index, dloss, out);
  });
}

}  // namespace tfm::ops
