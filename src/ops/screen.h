#pragma once
// Greedy search's choice of each row's best token without the float32 output projection (a
// translation that returns no scores, SearchOptions::return_scores false). The choice needs the
// order of the logits only near the top. An int8 product (ops/int8.h) gives every logit to within a
// bound made of the norms of the two quantization errors (‖x‖·‖w − ŵ‖ + ‖x − x̂‖·‖ŵ‖, Cauchy–Schwarz)
// and of float32 rounding; only the columns whose int8 logit comes within twice that bound of the
// row's best can be the float32 product's best, and those few are recomputed in double. The token
// chosen is then the one the full float32 product (in any summation order, then top_k_logprobs)
// chooses, ties to the lower id, wherever the recomputed best stands further from the runner-up
// than float32 rounding can move either; a row where it does not is left undecided, for the
// caller's full product. At 64 rows × 512 → 32,000 the int8 product reads a quarter of the float32
// weight's bytes (docs/performance.md).
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/int8.h"

namespace tfm::ops {

struct ScreenedProjection {
  QuantizedMatrix q;  // the weight's int8 copy, per output row (quantize_rows)
  Tensor weight;      // float32 [V, D], the float32 projection's own (a view): the candidates' rows
  Tensor bias;        // float32 [V] the logits get (a model's logits bias), or undefined
  // Over the rows w_k of the weight, rounded up: max ‖w_k − ŵ_k‖₂ (ŵ_k = scale_k · q_k), max ‖ŵ_k‖₂,
  // max ‖w_k‖₂, and max |b_k|.
  double max_error_norm = 0, max_quantized_norm = 0, max_norm = 0, max_bias = 0;
  bool finite = true;  // every weight and bias finite: else no row is decided (the full product's NaNs decide)
};

// weight: float32 [V, D] on the CPU (kept by reference, as `weight` above); bias: float32 [V] or
// undefined.
ScreenedProjection screen_projection(const Tensor& weight, const Tensor& bias = Tensor());

// For one row x [D] (float32 on the CPU), the bounds screened_argmax decides with: `int8` on
// |the int8 product's logit (bias included) − (x·w_k + b_k)|, `float32` on |the float32 product's
// logit (any summation order, then + b_k) − (x·w_k + b_k)|, and `limit` on |x·w_k + b_k|, for every k
// (exact real values on the right). finite: x's values and the projection's are.
struct ScreenBounds {
  double int8 = 0, float32 = 0, limit = 0;
  bool finite = true;
};
ScreenBounds screen_bounds(const float* x, int64_t D, const ScreenedProjection& p);

struct ScreenStats {
  int64_t undecided = 0;   // rows left for the full product
  int64_t candidates = 0;  // columns recomputed, over all rows
};

// x: float32 [R, D] on the CPU; banned: columns never chosen (they still must be valid columns).
// ids[r]: the column of row r's largest logit x_r · Wᵀ + b among those not banned, as the float32
// product would choose it; −1 where the row is undecided: its best two candidates too close to
// call, more than kMaxScreenCandidates candidates, a non-finite x or logit, or no allowed column.
ScreenStats screened_argmax(const Tensor& x, const ScreenedProjection& p, const std::vector<int32_t>& banned,
                            std::vector<int32_t>& ids);

// More candidates than this in a row (a flat distribution, or a loose bound) and the row is left to
// the full product: recomputing them would cost more than the product saves.
inline constexpr int64_t kMaxScreenCandidates = 512;

}  // namespace tfm::ops
