#pragma once
// Weight matrices packed once for inference's products: decoding's few rows (64 hypotheses for
// greedy search of 64 sentences) in thousands of calls, and the encoder's. BLAS repacks the weight
// matrix for its kernel on every call; a packed matrix is reordered once into the layout its
// product asks for (on the CPU: from the AVX-512 level on, oneDNN's matmul primitive, created once
// with the row count left to run time; at the AVX2 level, the project's own 16-column panels,
// ops/cpu/simd/panel_gemm.cc, but for wide outputs). Same product, other summation order: results
// agree with ops::matmul to float32 rounding.
// Inference only (Transformer::pack_weights).
#include <memory>

#include "core/tensor.h"
#include "ops/activation.h"
#include "ops/matmul.h"

namespace tfm::ops {

struct PackedMatrix {
  int64_t out = 0, in = 0;             // the weight's shape
  // The float32 [out, in] it was packed from (a view, not owned), for the products that BLAS does
  // faster; undefined once that memory is given back (Transformer::PlainWeights::kRelease): every
  // product then takes the packed copy.
  Tensor weight;
  Tensor bias;                         // float32 [out] added by the product (a view), or undefined
  Activation act = Activation::kNone;  // taken by the product after the bias
  // kBf16: packed rounded to bfloat16, x rounded at each product, float32 sums (Precision::kBf16's
  // definition, on bfloat16 instructions): every product takes the packed copy.
  Precision precision = Precision::kFloat32;
  // The device's packed copy and its product; null where packing does not pay for this shape on
  // this device (the CPU below the AVX2 level, but for wide outputs): `weight` then serves every
  // product.
  std::shared_ptr<const void> packed;
  Device device = Device::CPU;  // where `packed` (and the weight) are
};

// Whether pack_weight(kBf16) packs on `device`: on a GPU always (the weight rounded to bfloat16 once,
// for cuBLASLt's bf16 products with float32 sums), on the CPU where bf16_native() (ops/matmul.h).
bool packs_bf16(Device device);

// w: float32 [out, in]; bias: float32 [out] on w's device, or undefined. On a GPU: in bf16 a copy
// rounded to bfloat16 once, the product rounding only x, with the bias and activation in cuBLASLt's
// epilogue; in float32 no copy (`packed` null): the weight's product with them in its epilogue. The bias must outlive the
// result (the result's `bias` keeps an owning tensor alive); w only while the result's `weight`
// still refers to it, and for ever when the result has no packed copy (`packed` null). With a
// bias, the product adds it in the same pass (oneDNN's bias argument);
// with an activation it then takes that in the same pass too (a post-op: eltwise_relu, eltwise_swish
// with α = 1 for swish and 1.702 for gelu_sigmoid, eltwise_gelu_erf; the panels' own epilogue): a
// feed-forward layer's first product. Where the plain weight serves the product instead, ops::activate follows it.
// Precision::kBf16 needs packs_bf16(w.device()) and always packs.
PackedMatrix pack_weight(const Tensor& w, const Tensor& bias = Tensor(), Activation act = Activation::kNone,
                         Precision precision = Precision::kFloat32);

// y = x · Wᵀ (+ the bias it was packed with, then its activation); x: float32 [..., in] → y: float32 [..., out]. Uses
// the packed copy where it is faster (all but the wide output projection beyond 256 rows;
// docs/performance.md) or when `weight` is gone, and ops::matmul on `weight` otherwise.
// With a residual r (as ops::linear's: shaped as y, not y, the weight packed without an activation):
// y = r + the product, in the product's call on a GPU (its C), added after it on the CPU.
void matmul_packed(const Tensor& x, const PackedMatrix& w, const Tensor& y, const Tensor& residual = Tensor());

}  // namespace tfm::ops
