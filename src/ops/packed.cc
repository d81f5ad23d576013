#include "ops/packed.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

namespace tfm::ops {

bool packs_bf16(Device device) { return device != Device::CPU || cpu::bf16_native(); }

PackedMatrix pack_weight(const Tensor& w, const Tensor& bias, Activation act, Precision precision) {
  check_rank("pack_weight", "w", w, 2);
  check_dtype("pack_weight", "w", w, DType::F32);
  if (bias.defined()) {
    check_dtype("pack_weight", "bias", bias, DType::F32);
    TFM_CHECK(bias.numel() == w.size(0) && bias.device() == w.device(), "pack_weight: bias ", bias.shape(), " on ",
              name(bias.device()), " does not fit a weight of ", w.shape(), " on ", name(w.device()));
  }
  const bool bf16 = precision == Precision::kBf16;
  if (w.device() != Device::CPU) {
    // On a GPU: in bf16 a copy rounded once (the products then round only x); in float32 none, the
    // weight itself with its bias and activation (one cuBLASLt product with them in its epilogue).
    std::shared_ptr<const void> packed;
    if (bf16)
      dispatch("pack_weight", w.dtype(), w.device(), [](auto) {}, [&](cuda::Kernels& k) {
        packed = k.pack_bf16(w.size(0), w.size(1), w.data<float>());
      });
    return {w.size(0), w.size(1), w, bias, act, precision, std::move(packed), w.device()};
  }
  TFM_CHECK(!bf16 || cpu::bf16_native(), "pack_weight: bf16 packed weights need bfloat16 instructions (AVX-512 BF16 "
            "or AMX); here ", cpu::bf16_path());
  if (!bf16 && !cpu::packing_pays(w.size(0), w.size(1)))
    return {w.size(0), w.size(1), w, bias, act, precision, nullptr};
  return {w.size(0), w.size(1), w, bias, act, precision,
          cpu::pack_weight(w.size(0), w.size(1), w.data<float>(), bias.defined() ? bias.data<float>() : nullptr,
                           act, bf16)};
}

void matmul_packed(const Tensor& x, const PackedMatrix& w, const Tensor& y, const Tensor& residual) {
  TFM_CHECK(w.packed != nullptr || w.weight.defined(), "matmul_packed: the weight was given back and not packed");
  check_dtype("matmul_packed", "x", x, DType::F32);
  check_dtype("matmul_packed", "y", y, DType::F32);
  const int64_t out = w.out, in = w.in, rows = x.shape().rows();
  TFM_CHECK(x.rank() >= 1 && x.size(-1) == in, "matmul_packed: x ", x.shape(), " does not fit a weight of [", out,
            ", ", in, "]");
  TFM_CHECK(y.size(-1) == out && y.shape().rows() == rows, "matmul_packed: y has shape ", y.shape(), ", expected ",
            rows, " rows of ", out);
  TFM_CHECK(x.device() == y.device() && x.device() == w.device, "matmul_packed: x is on ", name(x.device()), ", y on ",
            name(y.device()), ", the packed weight on ", name(w.device));
  check_residual("matmul_packed", residual, y, w.act);
  // The weight itself (no packed copy, or on the CPU where BLAS is faster for this shape), with its
  // bias and activation: one product with them in its epilogue on a GPU.
  const bool on_cpu = x.device() == Device::CPU;
  const bool plain_wins = on_cpu && w.precision == Precision::kFloat32 && !cpu::packed_product_wins(rows, out, in);
  if (!w.packed || (w.weight.defined() && plain_wins)) {
    if (w.bias.defined()) {
      linear(x, w.weight, w.bias, w.act, y, Precision::kFloat32, residual);
    } else {
      matmul(x, w.weight, y, {.trans_b = true});
      activate(w.act, y, y);
      if (residual.defined()) add(residual, y, y);
    }
    return;
  }
  if (!on_cpu) {
    dispatch("matmul_packed", DType::F32, x.device(), [](auto) {}, [&](cuda::Kernels& k) {
      k.linear_packed_bf16(rows, in, out, x.data<float>(), w.packed.get(),
                           w.bias.defined() ? w.bias.data<float>() : nullptr, w.act, y.data<float>(),
                           residual.defined() ? residual.data<float>() : nullptr);
    });
    return;
  }
  dispatch("matmul_packed", DType::F32, Device::CPU,
           [&](auto) { cpu::matmul_packed(w.packed.get(), rows, x.data<float>(), y.data<float>()); });
  if (residual.defined()) add(residual, y, y);
}

}  // namespace tfm::ops
