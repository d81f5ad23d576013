#pragma once
// Sinusoidal positional encoding (Vaswani et al., 2017, §3.5):
//   PE(pos, 2i) = sin(pos / 10000^(2i/D)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/D)),
// and the variants published models were trained with (ModelConfig's positions,
// position_frequencies and position_offset): all sines first, then all cosines (Marian, fairseq,
// Hugging Face), Marian's rates 10000^(−i/(D/2−1)), and a first position other than 0.
// Computed in double precision, then rounded.
#include <cstdint>

#include "core/tensor.h"

namespace tfm::ops {

struct PositionEncoding {
  enum class Layout {
    kInterleaved,  // dimension 2i holds sin(pos · rate_i), 2i+1 cos(pos · rate_i) (§3.5)
    kSinCos,       // dimension i < D/2 holds sin(pos · rate_i), D/2 + i cos(pos · rate_i)
  };
  enum class Rates {
    kPaper,   // rate_i = 10000^(−2i/D) (§3.5; Hugging Face and CTranslate2 too)
    kMarian,  // rate_i = 10000^(−i/(D/2−1)) (Marian's C++, tensor2tensor)
  };
  Layout layout = Layout::kInterleaved;
  Rates rates = Rates::kPaper;
  int64_t offset = 0;  // a sentence's first token is at position `offset`
};

// pe: [T, D] ← PE(offset + start + t, d).
void positional_encoding(const Tensor& pe, int64_t start = 0, const PositionEncoding& encoding = {});
// x: [B, T, D]; x[b, t, :] += PE(offset + start + t, :).
void add_positional_encoding(const Tensor& x, int64_t start = 0, const PositionEncoding& encoding = {});
// The encoding is a constant: its backward passes the gradient through unchanged.

}  // namespace tfm::ops
