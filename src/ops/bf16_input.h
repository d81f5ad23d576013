#pragma once
// A bfloat16 product's input as its kernels take it (ops/cpu/kernels.h, ops/cuda/kernels.h): float32
// values, rounded to bfloat16 by the product on each call, or bfloat16 values (DType::BF16), read
// as they are (mixed-precision training's activations and its weights' bfloat16 copy).

namespace tfm::ops {

struct Bf16Input {
  const void* data = nullptr;
  bool bf16 = false;  // data holds bfloat16 values, else float32 ones
};

}  // namespace tfm::ops
