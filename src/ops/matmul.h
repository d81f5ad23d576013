#pragma once
// Matrix product through BLAS: C = alpha · op(A) · op(B) + beta · C, op(X) = Xᵀ when trans_x.
//   op(A): [..., M, K]   op(B): [..., K, N]   C: [..., M, N]
// Batched when A, B and C share their leading dims (one product per batch entry, e.g. per head).
// When B is a matrix and A has leading dims (a weight applied to every row), A's leading dims fold
// into M: [B, T, K] · [K, N] → [B, T, N]. That fold needs trans_a = false.
#include "core/tensor.h"

namespace tfm::ops {

struct MatmulArgs {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;  // 0 overwrites C, 1 accumulates into it
};

void matmul(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulArgs& args = {});

// Gradients of C = alpha · op(A) · op(B) (args.beta is ignored), accumulated (+=) into da and db in
// the layouts of A and B. Derivation, with A' = op(A), B' = op(B): dA' = alpha · dC · B'ᵀ and
// dB' = alpha · A'ᵀ · dC, transposed back where op() transposed. A null pointer skips that gradient.
void matmul_backward(const Tensor& a, const Tensor& b, const Tensor& dc, const Tensor* da, const Tensor* db,
                     const MatmulArgs& args = {});

}  // namespace tfm::ops
