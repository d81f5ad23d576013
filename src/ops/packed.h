#pragma once
// Weight matrices packed once for the products of decoding: few rows (64 hypotheses for greedy
// search of 64 sentences), thousands of calls. BLAS repacks the weight matrix into its kernel's
// blocked layout on every call; a packed matrix holds that layout already (on the CPU, oneDNN's
// matmul primitive with its weights reordered once and a row count given at run time). Same
// product, other summation order: results agree with ops::matmul to float32 rounding.
// Inference only (Transformer::pack_weights); the float32 weights stay where they are.
#include <memory>

#include "core/tensor.h"

namespace tfm::ops {

struct PackedMatrix {
  Tensor weight;                       // the float32 [out, in] it was packed from (a view; not owned)
  std::shared_ptr<const void> packed;  // the device's packed copy and its product
};

// w: float32 [out, in], on the CPU; must outlive the result.
PackedMatrix pack_weight(const Tensor& w);

// y = x · Wᵀ; x: float32 [..., in] → y: float32 [..., out]. Uses the packed copy where it is
// faster (few rows; docs/performance.md) and BLAS on `weight` otherwise.
void matmul_packed(const Tensor& x, const PackedMatrix& w, const Tensor& y);

}  // namespace tfm::ops
