#pragma once
// Moving rows: gathering hypotheses' rows and writing decoding caches.
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace tfm::ops {

// dst[i, ...] = src[indices[i], ...]: rows of src (along dim 0) picked by int32 indices [N];
// dst: [N, ...rest of src's shape]. dst must not alias src. With prefix ≥ 0 (and rank ≥ 2), only
// the first `prefix` positions along dim 1 are copied (a cache's filled part); the rest of dst is
// left as it is.
void index_select(const Tensor& src, const Tensor& indices, const Tensor& dst, int64_t prefix = -1);

// parts[i][n, :] = x[n, o_i : o_i + W_i] with the parts side by side along x's last dim: x [..., ΣW_i]
// → each part [..., W_i] with x's rows (a fused Q·K·V product's three outputs, each contiguous).
void split_columns(const Tensor& x, const std::vector<Tensor>& parts);

// cache[position, b, :] = x[b, 0, :] for every b: a decoding step's keys or values into its slab
// (ops::AttentionArgs::key_rows). cache: [L, R, D], x: [B, 1, D] with B ≤ R, 0 ≤ position < L.
void write_position(const Tensor& cache, const Tensor& x, int64_t position);

}  // namespace tfm::ops
