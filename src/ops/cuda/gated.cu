// The gated activation (ops/gated.h): one thread per hidden element, which reads its gate and up
// values before writing (so dpre may be pre); activations as the elementwise kernels'.
#include <cuda_runtime.h>

#include "ops/cuda/activation.cuh"
#include "ops/cuda/for_each.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {

void gated(int64_t rows, int64_t f, ops::Activation act, const float* pre, float* hidden) {
  for_each("gated", rows * f, [=] __device__(int64_t i) {
    const float* row = pre + (i / f) * 2 * f;
    const int64_t c = i % f;
    hidden[i] = activate_one(act, row[c]) * row[f + c];
  });
}

void gated_backward(int64_t rows, int64_t f, ops::Activation act, const float* dhidden, const float* pre,
                    float* dpre) {
  for_each("gated_backward", rows * f, [=] __device__(int64_t i) {
    const int64_t at = (i / f) * 2 * f + i % f;
    const float gate = pre[at], up = pre[at + f], dh = dhidden[i];
    dpre[at] = (dh * up) * derivative(act, gate);
    dpre[at + f] = activate_one(act, gate) * dh;
  });
}

}  // namespace tfm::cuda
