#include "ops/top_k.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

void top_k_logprobs(const Tensor& logits, int64_t k, const std::vector<int32_t>& banned, const Tensor& logp,
                    const Tensor& ids, const Tensor& lse) {
  check_rank("top_k_logprobs", "logits", logits, 2);
  const int64_t R = logits.size(0), V = logits.size(1);
  TFM_CHECK(k >= 1 && V >= 1, "top_k_logprobs: k must be >= 1 and the vocabulary non-empty, got k ", k, ", V ", V);
  TFM_CHECK(logp.shape() == Shape({R, k}) && ids.shape() == Shape({R, k}) && lse.shape() == Shape({R}),
            "top_k_logprobs: outputs must be [", R, ", ", k, "], [", R, ", ", k, "] and [", R, "], got ", logp.shape(),
            ", ", ids.shape(), ", ", lse.shape());
  check_dtype("top_k_logprobs", "logp", logp, DType::F64);
  check_dtype("top_k_logprobs", "ids", ids, DType::I32);
  check_dtype("top_k_logprobs", "lse", lse, DType::F64);
  for (int32_t b : banned) TFM_CHECK(b >= 0 && b < V, "top_k_logprobs: banned id ", b, " is outside [0, ", V, ")");
  const auto on = [&](Device d) {
    return logits.device() == d && logp.device() == d && ids.device() == d && lse.device() == d;
  };
  if (on(Device::CUDA) && logits.dtype() == DType::F32) {
    cuda::Kernels& kernels = cuda_kernels("top_k_logprobs", DType::F32);
    const double t0 = profiling() ? (kernels.synchronize(), profile_clock()) : 0.0;
    if (kernels.top_k_logprobs(R, V, k, logits.data<float>(), banned.data(), static_cast<int64_t>(banned.size()),
                               logp.data<double>(), ids.data<int32_t>(), lse.data<double>())) {
      if (profiling()) {
        kernels.synchronize();
        record_op_time("top_k_logprobs", profile_clock() - t0);
      }
      return;
    }
  }
  if (logits.device() != Device::CPU || !on(Device::CPU)) {
    // Selection on the host (a k or banned list larger than the device's kernel takes, or outputs on
    // another device than the logits): the logits copied over, the outputs copied back.
    const Tensor host_logp = Tensor::empty(logp.shape(), DType::F64), host_ids = Tensor::empty(ids.shape(), DType::I32),
                 host_lse = Tensor::empty(lse.shape(), DType::F64);
    top_k_logprobs(logits.to_host(), k, banned, host_logp,
                   host_ids, host_lse);
    logp.copy_from(host_logp);
    ids.copy_from(host_ids);
    lse.copy_from(host_lse);
    return;
  }
  std::vector<uint8_t> ban(static_cast<size_t>(V), 0);
  for (int32_t b : banned) ban[static_cast<size_t>(b)] = 1;
  dispatch("top_k_logprobs", logits.dtype(), logits.device(), [&](auto t) {
    using T = decltype(t);
    cpu::top_k_logprobs<T>(R, V, k, logits.data<T>(), ban.data(), logp.data<double>(), ids.data<int32_t>(),
                           lse.data<double>());
  });
}

}  // namespace tfm::ops
