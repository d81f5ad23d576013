#pragma once
// Gated activations (Shazeer, 2020): a feed-forward layer's first product gives 2F columns per row,
// the first F the gate, the last F the linear "up" part, and the hidden layer is their product:
//   hidden = act(pre[:, :F]) ⊙ pre[:, F:]
// swish: SwiGLU (Llama); gelu or gelu_tanh: GeGLU; none: the bilinear GLU.
#include "core/tensor.h"
#include "ops/activation.h"

namespace tfm::ops {

// pre: [N, 2F] (any leading dims); hidden: [N, F].
void gated(const Tensor& pre, Activation act, const Tensor& hidden);

// dpre[:, :F] = dhidden ⊙ pre[:, F:] ⊙ act′(pre[:, :F]),  dpre[:, F:] = dhidden ⊙ act(pre[:, :F]).
// dpre: [N, 2F], written (not accumulated); it may alias pre (each row is read before it is written).
void gated_backward(const Tensor& dhidden, const Tensor& pre, Activation act, const Tensor& dpre);

}  // namespace tfm::ops
