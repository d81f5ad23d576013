#pragma once
// Rotary position embedding (RoPE; Su et al., 2021): each head's first `dims` dimensions of the token
// at position p taken as dims/2 pairs, pair i turned by the angle p·r_i, its rate r_i = θ^(−2i/dims)
// or that rate scaled (ops/rotary_rate.h: linear, Llama 3.1's):
//   (a, b) → (a·cos − b·sin, a·sin + b·cos).
// Pairs are (i, i + dims/2) (half-split: Llama, GPT-NeoX, Hugging Face's rotate_half) or (2i, 2i+1)
// (interleaved: GPT-J, Meta's original Llama); the head's other dimensions pass through unchanged.
// The angles are computed in double precision and the rotation too, then rounded to the tensor's
// dtype: cos and sin of the large angles of long positions lose their accuracy in float.
//
// The map is a rotation, orthogonal, so its backward (dx = Rᵀ·dy) is the same call with the angles
// negated: inverse = true. Its inverse is the same call too: rotary(rotary(x), inverse) = x.
#include <cstdint>

#include "core/tensor.h"
#include "ops/rotary_rate.h"

namespace tfm::ops {

// x, out: [B, T, H·d] (H = heads_x heads of width d; out may alias x). The token (b, t) is at
// position start + t (+ offsets[b] where offsets is defined: int32 [B] on the host or on x's device,
// each batch entry's own shift, which may be negative). inverse: rotate by −angle (the backward).
void rotary(const Tensor& x, int64_t heads_x, const Rotary& rope, int64_t start, const Tensor& offsets, bool inverse,
            const Tensor& out);

}  // namespace tfm::ops
