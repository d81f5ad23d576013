#pragma once
// Where a tensor's memory lives (the CPU or a device) and the type of its elements, with their
// names for messages and the elements' sizes: what tensors and the device backends share.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tfm {

enum class Device : uint8_t { CPU, CUDA };
// BF16: bfloat16, the upper half of a float32 (8 exponent bits, 7 stored mantissa bits), stored as
// Bf16 below: mixed-precision training's activations (TrainOptions::bf16).
enum class DType : uint8_t { F32, F64, I32, I8, BF16 };

// A bfloat16 value's bits. from_float rounds to nearest, ties to even; a NaN stays a (quiet) NaN,
// ±∞ and values that round past the largest finite bfloat16 become ±∞. to_float is exact.
struct Bf16 {
  uint16_t bits = 0;
  // Without a branch, so that loops over it vectorize.
  static Bf16 from_float(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);  // (std::bit_cast: C++20, which the CUDA sources are not)
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    return {static_cast<uint16_t>(nan ? (u >> 16) | 0x40u : rounded)};
  }
  float to_float() const {
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
  }
};

const char* name(Device d);
const char* name(DType t);
size_t size_of(DType t);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<double>() { return DType::F64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int8_t>() { return DType::I8; }
template <> constexpr DType dtype_of<Bf16>() { return DType::BF16; }

}  // namespace tfm
