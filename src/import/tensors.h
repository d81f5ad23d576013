#pragma once
// Helpers of the importers (src/import).
#include <cmath>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tfm {

// values (row-major, of `shape`) as a float32 tensor, transposed when asked (a matrix stored
// [in, out] by Marian → [out, in] here). Throws naming `what` on a NaN or an infinity.
Tensor import_matrix(const std::vector<float>& values, const std::vector<int64_t>& shape, bool transpose,
                     const std::string& what);

}  // namespace tfm
