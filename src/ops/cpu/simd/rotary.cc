// Rotary position embedding's CPU kernel (ops/rotary.h): tokens in parallel, each token's cos and
// sin computed once in double for all its heads, from each pair's rate (ops/rotary_rate.h).
#include <cmath>
#include <vector>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

namespace {
// One head of one token: pair i is (i, i + half) or (2i, 2i + 1); the dims past 2·half are copied
// when out is not x. Each pair is read before it is written, so out may be x.
template <class T>
void rotate_head(int64_t half, int64_t head_dim, bool interleaved, const double* cs, const double* sn, const T* x,
                 T* out) {
  for (int64_t i = 0; i < half; ++i) {
    const int64_t j0 = interleaved ? 2 * i : i, j1 = interleaved ? 2 * i + 1 : i + half;
    const double a = x[j0], b = x[j1];
    out[j0] = static_cast<T>(a * cs[i] - b * sn[i]);
    out[j1] = static_cast<T>(a * sn[i] + b * cs[i]);
  }
  if (out != x)
    for (int64_t j = 2 * half; j < head_dim; ++j) out[j] = x[j];
}
}  // namespace

template <class T>
void rotary(int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim, const tfm::ops::Rotary& rope, int64_t start,
            const int32_t* offsets, bool inverse, const T* x, T* out) {
  const int64_t half = rope.dims / 2, width = heads * head_dim;
  const bool interleaved = rope.interleaved;
  std::vector<double> rate(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) rate[i] = tfm::ops::rotary_rate(rope, i);
#pragma omp parallel if (batch * tokens * width >= (1 << 15))
  {
    std::vector<double> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
#pragma omp for schedule(static)
    for (int64_t bt = 0; bt < batch * tokens; ++bt) {
      const int64_t b = bt / tokens, t = bt % tokens;
      const double p = double(start + t + (offsets ? offsets[b] : 0));
      for (int64_t i = 0; i < half; ++i) {
        const double angle = p * rate[i];
        cs[i] = std::cos(angle);
        sn[i] = inverse ? -std::sin(angle) : std::sin(angle);
      }
      for (int64_t h = 0; h < heads; ++h)
        rotate_head(half, head_dim, interleaved, cs.data(), sn.data(), x + bt * width + h * head_dim,
                    out + bt * width + h * head_dim);
    }
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_ROTARY)

TFM_SIMD_END
