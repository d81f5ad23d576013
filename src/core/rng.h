#pragma once
// Counter-based random numbers (Philox4x32-10, Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC 2011). A value is a pure function of (key, stream, index): element i of a dropout
// mask is the same whatever the number of threads or the order they run in, and a generator's
// whole state is two integers, so it goes into a checkpoint as is.
#include <array>
#include <cstdint>

namespace tfm {

// The Philox4x32-10 block function: four 32-bit outputs for a 128-bit counter and a 64-bit key.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// One op call's random numbers: value i is uniform(i), reproducible and independent of threads.
struct RngStream {
  uint64_t key = 0;     // the generator's seed
  uint64_t stream = 0;  // which call of the generator this is

  // Four uniform floats in [0, 1) for indices 4*block .. 4*block+3.
  std::array<float, 4> uniform4(uint64_t block) const;
  float uniform(uint64_t index) const { return uniform4(index / 4)[index % 4]; }
};

// Hands out a fresh stream to each op call that needs random numbers (dropout).
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : seed_(seed) {}
  RngStream next() { return RngStream{seed_, counter_++}; }

  // The whole state, for checkpoints.
  uint64_t seed() const { return seed_; }
  uint64_t counter() const { return counter_; }
  void restore(uint64_t seed, uint64_t counter) { seed_ = seed; counter_ = counter; }

 private:
  uint64_t seed_;
  uint64_t counter_ = 0;
};

}  // namespace tfm
