// The memory a search needs beyond the model's weights, estimated before it starts
// (estimate_search_bytes), so that a translation too large for the device is refused up front.
#include <algorithm>
#include <cmath>
#include <limits>

#include "decode/search.h"

namespace tfm {

int64_t estimate_search_bytes(const ModelConfig& c, int64_t sentences, int64_t source_tokens,
                              const SearchOptions& o) {
  // In doubles: a huge beam or length must give a huge estimate, not an overflowed one.
  const double K = static_cast<double>(o.beam_size), B = static_cast<double>(sentences);
  const double R = B * K;                                          // hypotheses decoded together
  const double S = static_cast<double>(source_tokens) + 1;         // with EOS
  const double cap = std::max(1.0, std::floor(o.max_length_a * static_cast<double>(source_tokens) + o.max_length_b));
  const double D = static_cast<double>(c.d_model), F = static_cast<double>(c.d_ff), V = static_cast<double>(c.vocab_size);
  const double H = static_cast<double>(c.heads), L = static_cast<double>(c.decoder_layers);
  const double f = 4;  // bytes of a float32
  double bytes = L * 2 * cap * R * D * f                          // self-attention cache [cap, R, D] per layer
                 + L * 2 * B * S * D * f                          // encoder keys and values per layer
                 + B * S * (8 * D + F) * f + B * H * S * S * f     // the encoder's activations
                 + R * (8 * D + F) * f + R * H * (cap + S) * f     // one step's activations
                 + 2 * R * V * f                                  // its logits (and their copy in search)
                 + R * (K > 1 ? 2 * K : 1) * 12                   // top-k: a double and an id per entry
                 + (K > 1 ? 2 * K * K * 16 : 0)                   // one sentence's candidates
                 + cap * R * 8                                    // each step's parents and tokens
                 + B * K * cap * 8;                               // ended hypotheses' tokens
  if (o.record_attention) bytes += 2 * cap * L * R * H * S * f;  // each step's, then each hypothesis's
  return bytes >= 9e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(bytes);
}

}  // namespace tfm
