#pragma once
// Parameter initialisation from a seeded counter-based generator (reproducible, thread-independent).
#include <cstdint>

#include "core/rng.h"
#include "core/tensor.h"

namespace tfm {

// Uniform in [−a, a).
void init_uniform(const Tensor& t, double a, const RngStream& rng);
// Normal with mean 0 and standard deviation `std` (Box–Muller).
void init_normal(const Tensor& t, double std, const RngStream& rng);
// Glorot & Bengio (2010): uniform with a = √(6 / (fan_in + fan_out)), for a weight [out, in].
void init_xavier_uniform(const Tensor& weight, const RngStream& rng);

}  // namespace tfm
