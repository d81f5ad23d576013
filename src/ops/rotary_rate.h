#pragma once
// The rotary position embedding's shape (ops::Rotary) and each pair's rate, with the rate scalings
// of long-context checkpoints (linear interpolation, Llama 3.1's rule): one function that the CPU
// and CUDA kernels share, so that both turn each pair by the same angle.
#include <cmath>
#include <cstdint>

#include "core/rng.h"  // TFM_HOST_DEVICE

namespace tfm::ops {

// How pair i's rate r_i = θ^(−2i/dims) is scaled.
enum class RotaryScaling {
  kNone,    // r_i
  kLinear,  // r_i / factor: positions divided by factor (position interpolation)
  kLlama3,  // by wavelength λ_i = 2π / r_i against L = original_positions: λ_i < L / high_freq_factor
            // keeps r_i; λ_i > L / low_freq_factor gives r_i / factor; between, the mix
            // (1 − s)·r_i/factor + s·r_i with s = (L/λ_i − low_freq_factor) / (high_freq_factor − low_freq_factor)
};

struct Rotary {
  int64_t dims = 0;          // rotated dimensions of each head: even, 2 ≤ dims ≤ the head width
  double theta = 10000.0;    // the base θ: positive
  bool interleaved = false;  // pairs (2i, 2i+1) instead of (i, i + dims/2)
  RotaryScaling scaling = RotaryScaling::kNone;
  double factor = 1.0;             // kLinear, kLlama3: positive
  double low_freq_factor = 1.0;    // kLlama3: positive, below high_freq_factor
  double high_freq_factor = 4.0;   // kLlama3
  double original_positions = 0;   // kLlama3: L, the context length the rates were trained for: positive
};

// Pair i's rate in radians per position, in double precision (as transformers' rotary frequencies,
// inv_freq, computed in double).
TFM_HOST_DEVICE inline double rotary_rate(const Rotary& rope, int64_t i) {
  const double rate = pow(rope.theta, -2.0 * double(i) / double(rope.dims));
  if (rope.scaling == RotaryScaling::kLinear) return rate / rope.factor;
  if (rope.scaling != RotaryScaling::kLlama3) return rate;
  const double wavelength = 2.0 * 3.141592653589793238462643 / rate;
  if (wavelength < rope.original_positions / rope.high_freq_factor) return rate;
  if (wavelength > rope.original_positions / rope.low_freq_factor) return rate / rope.factor;
  const double s = (rope.original_positions / wavelength - rope.low_freq_factor) /
                   (rope.high_freq_factor - rope.low_freq_factor);
  return (1.0 - s) * rate / rope.factor + s * rate;
}

}  // namespace tfm::ops
