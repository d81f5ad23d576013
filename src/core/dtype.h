#pragma once
// Where a tensor's memory lives (the CPU or a device) and the type of its elements, with their
// names for messages and the elements' sizes: what tensors and the device backends share.
#include <cstddef>
#include <cstdint>

namespace tfm {

enum class Device : uint8_t { CPU, CUDA };
enum class DType : uint8_t { F32, F64, I32, I8 };

const char* name(Device d);
const char* name(DType t);
size_t size_of(DType t);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<double>() { return DType::F64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int8_t>() { return DType::I8; }

}  // namespace tfm
