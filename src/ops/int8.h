#pragma once
// int8 matrix products for inference (an option of translate): weights quantized once per output
// channel (symmetric, w ≈ q · scale[row]), activations per row on the fly; the products run on
// the CPU's integer dot products through oneDNN (u8 × s8 → s32), 4–5× the float32 rate on CPUs with
// VNNI (docs/performance.md).
#include <memory>

#include "core/tensor.h"
#include "ops/activation.h"

namespace tfm::ops {

struct QuantizedMatrix {
  Tensor q;      // int8 [out, in]; undefined once `panels` holds the only copy (release_unpacked)
  Tensor scale;  // float32 [out]
  Tensor bias;   // float32 [out] added by every product (a fused product's own), or undefined
  // q packed once for the project's own int8 kernel, where it beats oneDNN's gemm (ops/cpu/int8.cc:
  // 7-bit activations); null elsewhere. The same integer sums either way.
  // Copies share it: q is not to be changed once packed.
  std::shared_ptr<const void> panels;
  int64_t in = 0;  // q's columns (the product's depth), kept when q goes; 0: q's own

  int64_t out() const { return scale.numel(); }
};

// w: float32 [out, in] → its per-row quantization (scale = max |w_row| / 127), packed too where that
// pays.
QuantizedMatrix quantize_rows(const Tensor& w);

// Gives back w.q where w.panels holds the weight for every product (inference's int8 weights keep one
// copy); a matrix without panels keeps q.
void release_unpacked(QuantizedMatrix& w);

// y = act(x · ŵᵀ + bias) with ŵ the dequantized weight; x: float32 [..., in] → y: float32 [..., out];
// bias: float32 [out], the caller's or w.bias (not both), or none; added in the same pass as the
// dequantization, as is the activation.
// Each row of x is quantized with its own scale, max |x_row| / L, to integers in [-L, L] (rounded half
// away from zero), L = int8_activation_levels().
void matmul_int8(const Tensor& x, const QuantizedMatrix& w, const Tensor& y, const Tensor& bias = Tensor(),
                 Activation act = Activation::kNone);

// L: 127 (8 bits) where oneDNN's integer products sum in 32 bits (VNNI, and off x86-64); 63 (7 bits)
// on x86-64 CPUs without VNNI (or at a level below avx512_vnni, ops/cpu/isa.h), whose products add
// pairs in 16 bits: 8-bit activations could overflow there, and silently give wrong results.
int int8_activation_levels();

}  // namespace tfm::ops
