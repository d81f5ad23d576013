#pragma once
// 16-bit floats read from model files (import's float16 .npz arrays, F16 and BF16 safetensors),
// widened to float32 exactly: every 16-bit value is a float32 value.
#include <bit>
#include <cstdint>

namespace tfm {

// IEEE binary16 bits to float32: subnormals, infinities and NaNs included.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
  if (exp == 0 && mant == 0) {
    bits = sign;
  } else if (exp == 0) {  // subnormal: mant · 2^-24, normalized for float32
    exp = 127 - 15 + 1;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --exp;
    }
    bits = sign | exp << 23 | (mant & 0x3ffu) << 13;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  return std::bit_cast<float>(bits);
}

// bfloat16 bits (a float32's upper half) to float32.
inline float bf16_to_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

}  // namespace tfm
