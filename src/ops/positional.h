#pragma once
// Sinusoidal positional encoding (Vaswani et al., 2017, §3.5):
//   PE(pos, 2i) = sin(pos / 10000^(2i/D)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/D)).
// Computed in double precision, then rounded.
#include <cstdint>

#include "core/tensor.h"

namespace tfm::ops {

// pe: [T, D] ← PE(start + t, d).
void positional_encoding(const Tensor& pe, int64_t start = 0);
// x: [B, T, D]; x[b, t, :] += PE(start + t, :).
void add_positional_encoding(const Tensor& x, int64_t start = 0);
// The encoding is a constant: its backward passes the gradient through unchanged.

}  // namespace tfm::ops
