#pragma once
// int8 matrix products for inference (an option of translate): weights quantized once per output
// channel (symmetric, w ≈ q · scale[row]), activations per row on the fly; the products run on
// the CPU's VNNI instructions through oneDNN (u8 × s8 → s32, no saturation on VNNI), 4–5× the
// float32 rate on these machines (docs/performance.md).
#include "core/tensor.h"
#include "ops/activation.h"

namespace tfm::ops {

struct QuantizedMatrix {
  Tensor q;      // int8 [out, in]
  Tensor scale;  // float32 [out]
  Tensor bias;   // float32 [out] added by every product (a fused product's own), or undefined
};

// w: float32 [out, in] → its per-row quantization (scale = max |w_row| / 127).
QuantizedMatrix quantize_rows(const Tensor& w);

// y = act(x · ŵᵀ + bias) with ŵ the dequantized weight; x: float32 [..., in] → y: float32 [..., out];
// bias: float32 [out], the caller's or w.bias (not both), or none; added in the same pass as the
// dequantization, as is the activation.
// Each row of x is quantized to 8 bits with its own scale (max |x_row| / 127).
void matmul_int8(const Tensor& x, const QuantizedMatrix& w, const Tensor& y, const Tensor& bias = Tensor(),
                 Activation act = Activation::kNone);

}  // namespace tfm::ops
