// Rotary position embedding's checks and its dispatch to the CPU and CUDA kernels.
#include "ops/rotary.h"

#include <cmath>
#include <memory>

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

namespace {
// The scaling's parameters where it reads them: finite, positive, Llama 3.1's factors ordered.
void check_scaling(const Rotary& rope) {
  if (rope.scaling == RotaryScaling::kNone) return;
  TFM_CHECK(std::isfinite(rope.factor) && rope.factor > 0, "rotary: factor must be positive and finite, got ",
            rope.factor);
  if (rope.scaling != RotaryScaling::kLlama3) return;
  TFM_CHECK(std::isfinite(rope.high_freq_factor) && rope.low_freq_factor > 0 &&
                rope.high_freq_factor > rope.low_freq_factor,
            "rotary: low_freq_factor ", rope.low_freq_factor, " and high_freq_factor ", rope.high_freq_factor,
            " must satisfy 0 < low < high");
  TFM_CHECK(std::isfinite(rope.original_positions) && rope.original_positions > 0,
            "rotary: original_positions must be positive, got ", rope.original_positions);
}

// The head width d, after checking every argument but the tensors' dtypes and devices.
int64_t check_rotary(const Tensor& x, int64_t heads_x, const Rotary& rope, int64_t start, const Tensor& offsets,
                     const Tensor& out) {
  TFM_CHECK(x.rank() == 3, "rotary: x must be [batch, tokens, heads * head_dim], got shape ", x.shape());
  const int64_t width = x.size(2);
  TFM_CHECK(heads_x > 0 && width % heads_x == 0, "rotary: heads_x = ", heads_x,
            " must be positive and divide x's last dim ", width, " (x has shape ", x.shape(), ")");
  const int64_t d = width / heads_x;
  TFM_CHECK(rope.dims >= 2 && rope.dims <= d && rope.dims % 2 == 0, "rotary: dims = ", rope.dims,
            " must be even and between 2 and the head width ", d, " (", width, " / ", heads_x, " heads)");
  TFM_CHECK(rope.theta > 0 && std::isfinite(rope.theta), "rotary: theta must be positive and finite, got ",
            rope.theta);
  check_scaling(rope);
  TFM_CHECK(start >= 0, "rotary: start must be non-negative, got ", start);
  check_same_shape("rotary", "x", x, "out", out);
  if (offsets.defined()) {
    check_dtype("rotary", "offsets", offsets, DType::I32);
    TFM_CHECK(offsets.rank() == 1 && offsets.size(0) == x.size(0), "rotary: offsets has shape ", offsets.shape(),
              ", expected [", x.size(0), "] (one per batch entry)");
    TFM_CHECK(offsets.device() == Device::CPU || offsets.device() == x.device(), "rotary: offsets is on ",
              name(offsets.device()), ", expected the host or ", name(x.device()), " (x's device)");
  }
  return d;
}
}  // namespace

void rotary(const Tensor& x, int64_t heads_x, const Rotary& rope, int64_t start, const Tensor& offsets, bool inverse,
            const Tensor& out) {
  const int64_t d = check_rotary(x, heads_x, rope, start, offsets, out);
  check_all("rotary", x.dtype(), x.device(), {{"out", &out}});
  const int64_t batch = x.size(0), tokens = x.size(1);
  dispatch("rotary", x.dtype(), x.device(), [&](auto t) {
    using T = decltype(t);
    const int32_t* shift = nullptr;
    std::unique_ptr<HostInts> host;
    if (offsets.defined()) {
      host = std::make_unique<HostInts>(offsets);
      shift = host->data();
    }
    cpu::rotary<T>(batch, tokens, heads_x, d, rope, start, shift, inverse, x.data<T>(), out.data<T>());
  }, [&](cuda::Kernels& k) {
    const Tensor shift = on_device(offsets, x.device());
    k.rotary(batch, tokens, heads_x, d, rope, start, shift.defined() ? shift.data<int32_t>() : nullptr, inverse,
             x.data<float>(), out.data<float>());
  });
}

}  // namespace tfm::ops
