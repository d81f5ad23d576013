#include "ops/int8.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

QuantizedMatrix quantize_rows(const Tensor& w) {
  check_rank("quantize_rows", "w", w, 2);
  check_dtype("quantize_rows", "w", w, DType::F32);
  TFM_CHECK(w.device() == Device::CPU, "quantize_rows: no kernel for device '", name(w.device()), "'");
  QuantizedMatrix out{Tensor::empty(w.shape(), DType::I8), Tensor::empty({w.size(0)}), Tensor(), nullptr, w.size(1)};
  cpu::quantize_rows(w.size(0), w.size(1), w.data<float>(), out.q.data<int8_t>(), out.scale.data<float>());
  out.panels = cpu::pack_int8(w.size(0), w.size(1), out.q.data<int8_t>());
  return out;
}

void release_unpacked(QuantizedMatrix& w) {
  if (w.panels) w.q = Tensor();
}

void matmul_int8(const Tensor& x, const QuantizedMatrix& w, const Tensor& y, const Tensor& caller_bias,
                 Activation act) {
  TFM_CHECK(!caller_bias.defined() || !w.bias.defined(), "matmul_int8: a bias given for a matrix with its own");
  const Tensor& bias = caller_bias.defined() ? caller_bias : w.bias;
  TFM_CHECK(w.q.defined() || w.panels, "matmul_int8: the weight has neither its int8 values nor their panels");
  if (w.q.defined()) {
    check_rank("matmul_int8", "weight", w.q, 2);
    check_dtype("matmul_int8", "weight", w.q, DType::I8);
    TFM_CHECK(w.q.size(0) == w.out() && (w.in == 0 || w.q.size(1) == w.in), "matmul_int8: weight ", w.q.shape(),
              " with ", w.out(), " scales and depth ", w.in);
  }
  TFM_CHECK(w.in > 0 || w.q.defined(), "matmul_int8: a weight of panels alone needs its depth");
  check_dtype("matmul_int8", "x", x, DType::F32);
  check_dtype("matmul_int8", "y", y, DType::F32);
  const int64_t out = w.out(), in = w.q.defined() ? w.q.size(1) : w.in;
  TFM_CHECK(x.rank() >= 1 && x.size(-1) == in, "matmul_int8: x ", x.shape(), " does not fit a weight of [", out,
            ", ", in, "]");
  TFM_CHECK(y.size(-1) == out && y.shape().rows() == x.shape().rows(), "matmul_int8: y has shape ", y.shape(),
            ", expected ", x.shape().rows(), " rows of ", out);
  if (bias.defined()) {
    check_dtype("matmul_int8", "bias", bias, DType::F32);
    TFM_CHECK(bias.numel() == out, "matmul_int8: bias has ", bias.numel(), " elements for ", out, " outputs");
  }
  TFM_CHECK(x.device() == Device::CPU && y.device() == Device::CPU && (!bias.defined() || bias.device() == Device::CPU),
            "matmul_int8: no kernel for this device");
  cpu::matmul_int8(x.shape().rows(), out, in, x.data<float>(), w.q.defined() ? w.q.data<int8_t>() : nullptr, w.scale.data<float>(),
                   bias.defined() ? bias.data<float>() : nullptr, act, y.data<float>(), w.panels.get());
}

int int8_activation_levels() { return cpu::int8_activation_levels(); }

}  // namespace tfm::ops
