#pragma once
// Moving rows: beam reordering and writing decoding caches.
#include <cstdint>

#include "core/tensor.h"

namespace tfm::ops {

// dst[i, ...] = src[indices[i], ...]: rows of src (along dim 0) picked by int32 indices [N];
// dst: [N, ...rest of src's shape]. dst must not alias src. With prefix ≥ 0 (and rank ≥ 2), only
// the first `prefix` positions along dim 1 are copied (a cache's filled part); the rest of dst is
// left as it is.
void index_select(const Tensor& src, const Tensor& indices, const Tensor& dst, int64_t prefix = -1);

// t[i, ...] = t[indices[i], ...] for every row i at once, in place: indices [N] with N = t.size(0).
// Rows with indices[i] == i are not touched, so a beam reordering that keeps most hypotheses in
// their rows copies little. `prefix` as for index_select.
void permute_rows(const Tensor& t, const Tensor& indices, int64_t prefix = -1);

// cache[b, position, :] = x[b, 0, :] for every b; cache: [B, L, D], x: [B, 1, D], 0 ≤ position < L.
void write_position(const Tensor& cache, const Tensor& x, int64_t position);

}  // namespace tfm::ops
