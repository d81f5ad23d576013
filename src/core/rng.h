#pragma once
// Counter-based random numbers (Philox4x32-10, Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC 2011). A value is a pure function of (key, stream, index): element i of a dropout
// mask is the same whatever the number of threads or the order they run in, and a generator's
// whole state is two integers, so it goes into a checkpoint as is.
#include <array>
#include <cstdint>

// The generator's functions compile for CUDA devices too (ops/cuda draws the same masks as the CPU);
// the host compiler sees plain inline functions.
#ifdef __CUDACC__
#define TFM_HOST_DEVICE __host__ __device__
#else
#define TFM_HOST_DEVICE
#endif

namespace tfm {

// Constants from the paper: the round multipliers and the Weyl key increments.
namespace philox {
constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
// The top 24 bits of a word give every float in [0, 1) on a 2^-24 grid, never 1.0.
TFM_HOST_DEVICE inline float to_unit_float(uint32_t r) { return static_cast<float>(r >> 8) * (1.0f / 16777216.0f); }
}  // namespace philox

// The Philox4x32-10 block function: four 32-bit outputs for a 128-bit counter and a 64-bit key.
// Inline: dropout calls it once per four elements.
TFM_HOST_DEVICE inline std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  using namespace philox;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

// One op call's random numbers: value i is uniform(i), reproducible and independent of threads.
struct RngStream {
  uint64_t key = 0;     // the generator's seed
  uint64_t stream = 0;  // which call of the generator this is

  // Four uniform floats in [0, 1) for indices 4*block .. 4*block+3.
  TFM_HOST_DEVICE std::array<float, 4> uniform4(uint64_t block) const {
    const std::array<uint32_t, 4> counter = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                             static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
    const std::array<uint32_t, 4> r =
        philox4x32(counter, {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
    std::array<float, 4> out;
    for (int i = 0; i < 4; ++i) out[i] = philox::to_unit_float(r[i]);
    return out;
  }
  float uniform(uint64_t index) const { return uniform4(index / 4)[index % 4]; }

  // A uniform double in [0, 1) on a 2^-53 grid, from the first two words of block `index`.
  double uniform_double(uint64_t index) const {
    const std::array<uint32_t, 4> counter = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                                             static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
    const std::array<uint32_t, 4> r =
        philox4x32(counter, {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
    const uint64_t bits = (static_cast<uint64_t>(r[0] >> 5) << 26) | (r[1] >> 6);  // 27 + 26 bits
    return static_cast<double>(bits) * (1.0 / 9007199254740992.0);                  // / 2^53
  }

  // uniform4 of blocks first .. first + 15, in order: out[4·j + i] = uniform4(first + j)[i]. The same
  // numbers, computed 16 blocks side by side so that the compiler vectorizes the rounds (dropout's
  // cost was mostly this generator).
  static constexpr int kBlocks = 16;
  void uniform_blocks(uint64_t first, float* out) const {
    uint32_t c0[kBlocks], c1[kBlocks], c2[kBlocks], c3[kBlocks];
    for (int j = 0; j < kBlocks; ++j) {
      const uint64_t block = first + static_cast<uint64_t>(j);
      c0[j] = static_cast<uint32_t>(block);
      c1[j] = static_cast<uint32_t>(block >> 32);
      c2[j] = static_cast<uint32_t>(stream);
      c3[j] = static_cast<uint32_t>(stream >> 32);
    }
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int round = 0; round < 10; ++round) {  // philox4x32's rounds, lane by lane
#pragma omp simd
      for (int j = 0; j < kBlocks; ++j) {
        const uint64_t p0 = static_cast<uint64_t>(philox::kMul0) * c0[j];
        const uint64_t p1 = static_cast<uint64_t>(philox::kMul1) * c2[j];
        const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[j] ^ k0;
        const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[j] ^ k1;
        c0[j] = n0;
        c1[j] = static_cast<uint32_t>(p1);
        c2[j] = n2;
        c3[j] = static_cast<uint32_t>(p0);
      }
      k0 += philox::kWeyl0;
      k1 += philox::kWeyl1;
    }
    for (int j = 0; j < kBlocks; ++j) {
      out[4 * j + 0] = philox::to_unit_float(c0[j]);
      out[4 * j + 1] = philox::to_unit_float(c1[j]);
      out[4 * j + 2] = philox::to_unit_float(c2[j]);
      out[4 * j + 3] = philox::to_unit_float(c3[j]);
    }
  }
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
