#pragma once
// Moving rows: gathering hypotheses' rows and splitting a fused product's columns (decoding's
// keys and values go from it straight into their cache).
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


}  // namespace tfm::ops
