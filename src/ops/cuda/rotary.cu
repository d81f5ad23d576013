// Rotary position embedding (ops/rotary.h): one thread per rotated pair, its angle, cos and sin in
// double from the rate the CPU's uses (ops/rotary_rate.h); then, when out is not x, the heads'
// unrotated dims copied.
#include <cuda_runtime.h>

#include "ops/cuda/common.cuh"
#include "ops/cuda/for_each.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {

void rotary(int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim, const ops::Rotary& rope, int64_t start,
            const int32_t* offsets, bool inverse, const float* x, float* out) {
  const ops::Rotary r = rope;  // captured by value into the device lambda
  const int64_t dims = r.dims, half = dims / 2, width = heads * head_dim;
  const bool interleaved = r.interleaved;
  for_each("rotary", batch * tokens * heads * half, [=] __device__(int64_t n) {
    const int64_t i = n % half, h = (n / half) % heads, bt = n / (half * heads);
    const int64_t b = bt / tokens, t = bt % tokens;
    const double p = double(start + t + (offsets ? offsets[b] : 0));
    const double angle = p * ops::rotary_rate(r, i);
    double s, c;
    sincos(angle, &s, &c);
    if (inverse) s = -s;
    const int64_t base = bt * width + h * head_dim;
    const int64_t j0 = base + (interleaved ? 2 * i : i), j1 = base + (interleaved ? 2 * i + 1 : i + half);
    const double a = x[j0], bv = x[j1];
    out[j0] = static_cast<float>(a * c - bv * s);
    out[j1] = static_cast<float>(a * s + bv * c);
  });
  const int64_t rest = head_dim - dims;
  if (out == x || rest == 0) return;
  for_each("rotary", batch * tokens * heads * rest, [=] __device__(int64_t n) {
    const int64_t j = dims + n % rest, row = n / rest;  // row: one head of one token
    out[row * head_dim + j] = x[row * head_dim + j];
  });
}

}  // namespace tfm::cuda
