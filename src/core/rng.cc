#include "core/rng.h"

namespace tfm {

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  // Constants from the paper: the round multipliers and the Weyl key increments.
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
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

std::array<float, 4> RngStream::uniform4(uint64_t block) const {
  const std::array<uint32_t, 4> counter = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                           static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
  const std::array<uint32_t, 2> k = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  const std::array<uint32_t, 4> r = philox4x32(counter, k);
  std::array<float, 4> out;
  // The top 24 bits give every float in [0, 1) on a 2^-24 grid, never 1.0.
  for (int i = 0; i < 4; ++i) out[i] = static_cast<float>(r[i] >> 8) * (1.0f / 16777216.0f);
  return out;
}

}  // namespace tfm
