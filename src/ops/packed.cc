#include "ops/packed.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

namespace tfm::ops {

PackedMatrix pack_weight(const Tensor& w, const Tensor& bias, Activation act, Precision precision) {
  check_rank("pack_weight", "w", w, 2);
  check_dtype("pack_weight", "w", w, DType::F32);
  TFM_CHECK(w.device() == Device::CPU, "pack_weight: no kernel for device '", name(w.device()), "'");
  if (bias.defined()) {
    check_dtype("pack_weight", "bias", bias, DType::F32);
    TFM_CHECK(bias.numel() == w.size(0) && bias.device() == Device::CPU, "pack_weight: bias ", bias.shape(),
              " does not fit a weight of ", w.shape());
  }
  const bool bf16 = precision == Precision::kBf16;
  TFM_CHECK(!bf16 || cpu::bf16_native(), "pack_weight: bf16 packed weights need bfloat16 instructions (AVX-512 BF16 "
            "or AMX); here ", cpu::bf16_path());
  if (!bf16 && !cpu::packing_pays(w.size(0), w.size(1)))
    return {w.size(0), w.size(1), w, bias, act, precision, nullptr};
  return {w.size(0), w.size(1), w, bias, act, precision,
          cpu::pack_weight(w.size(0), w.size(1), w.data<float>(), bias.defined() ? bias.data<float>() : nullptr,
                           act, bf16)};
}

void matmul_packed(const Tensor& x, const PackedMatrix& w, const Tensor& y) {
  TFM_CHECK(w.packed != nullptr || w.weight.defined(), "matmul_packed: the weight was given back and not packed");
  check_dtype("matmul_packed", "x", x, DType::F32);
  check_dtype("matmul_packed", "y", y, DType::F32);
  const int64_t out = w.out, in = w.in, rows = x.shape().rows();
  TFM_CHECK(x.rank() >= 1 && x.size(-1) == in, "matmul_packed: x ", x.shape(), " does not fit a weight of [", out,
            ", ", in, "]");
  TFM_CHECK(y.size(-1) == out && y.shape().rows() == rows, "matmul_packed: y has shape ", y.shape(), ", expected ",
            rows, " rows of ", out);
  TFM_CHECK(x.device() == Device::CPU && y.device() == Device::CPU, "matmul_packed: no kernel for this device");
  const bool plain_wins = w.precision == Precision::kFloat32 && !cpu::packed_product_wins(rows, out, in);
  if (!w.packed || (w.weight.defined() && plain_wins)) {
    matmul(x, w.weight, y, {.trans_b = true});
    if (w.bias.defined()) bias_add(y, w.bias, y);
    activate(w.act, y, y);
    return;
  }
  dispatch("matmul_packed", DType::F32, Device::CPU,
           [&](auto) { cpu::matmul_packed(w.packed.get(), rows, x.data<float>(), y.data<float>()); });
}

}  // namespace tfm::ops
