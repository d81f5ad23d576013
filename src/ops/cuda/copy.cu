// Byte moves (ops/copy.h): rows picked by device indices, a column band of each row, and a row's
// column bands side by side into their own arrays.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "ops/cuda/common.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {
namespace {

template <class W>
__global__ void copy_rows_kernel(int64_t n, int64_t row_words, int64_t copy_words, const int32_t* indices, const W* src,
                                 W* dst) {
  const int64_t total = n * copy_words;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / copy_words, w = i % copy_words;
    dst[row * row_words + w] = src[static_cast<int64_t>(indices[row]) * row_words + w];
  }
}

// A row's column bands (split_columns): band p is words [end[p − 1], end[p]) of each row (end[−1] = 0).
struct ColumnBands {
  uint32_t* dst[Kernels::kMaxBands];
  int64_t end[Kernels::kMaxBands];
  int count;
};

__global__ void split_columns_kernel(int64_t rows, int64_t row_words, const uint32_t* src, ColumnBands bands) {
  const int64_t total = rows * row_words;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / row_words, c = i % row_words;
    int p = 0;
    while (p + 1 < bands.count && c >= bands.end[p]) ++p;
    const int64_t begin = p > 0 ? bands.end[p - 1] : 0, width = bands.end[p] - begin;
    bands.dst[p][row * width + (c - begin)] = src[i];
  }
}

}  // namespace

void copy_rows(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, const char* src,
               char* dst) {
  if (n <= 0 || copy_bytes <= 0) return;
  const bool words = row_bytes % 4 == 0 && copy_bytes % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 4 == 0 &&
                     reinterpret_cast<uintptr_t>(dst) % 4 == 0;
  if (words)
    copy_rows_kernel<<<grid_for(n * copy_bytes / 4), kThreads>>>(n, row_bytes / 4, copy_bytes / 4, indices,
                                                                 reinterpret_cast<const uint32_t*>(src),
                                                                 reinterpret_cast<uint32_t*>(dst));
  else
    copy_rows_kernel<<<grid_for(n * copy_bytes), kThreads>>>(n, row_bytes, copy_bytes, indices, src, dst);
  launched("copy_rows");
}

void copy_columns(int64_t rows, int64_t row_bytes, int64_t offset_bytes, int64_t width_bytes, const char* src,
                  char* dst) {
  if (rows <= 0 || width_bytes <= 0) return;
  check(cudaMemcpy2DAsync(dst, static_cast<size_t>(width_bytes), src + offset_bytes, static_cast<size_t>(row_bytes),
                          static_cast<size_t>(width_bytes), static_cast<size_t>(rows), cudaMemcpyDeviceToDevice),
        "copy_columns");
}

void split_columns(int64_t rows, int64_t row_bytes, const std::vector<int64_t>& width_bytes,
                   const std::vector<char*>& dst, const char* src) {
  if (rows <= 0 || row_bytes <= 0) return;
  auto word = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 4 == 0; };
  bool one_kernel =
      width_bytes.size() <= static_cast<size_t>(Kernels::kMaxBands) && row_bytes % 4 == 0 && word(src);
  for (size_t p = 0; p < width_bytes.size(); ++p) one_kernel = one_kernel && width_bytes[p] % 4 == 0 && word(dst[p]);
  if (!one_kernel) {
    int64_t offset = 0;
    for (size_t p = 0; p < width_bytes.size(); ++p) {
      copy_columns(rows, row_bytes, offset, width_bytes[p], src, dst[p]);
      offset += width_bytes[p];
    }
    return;
  }
  ColumnBands bands{};
  int64_t end = 0;
  for (size_t p = 0; p < width_bytes.size(); ++p) {
    end += width_bytes[p] / 4;
    bands.dst[p] = reinterpret_cast<uint32_t*>(dst[p]);
    bands.end[p] = end;
  }
  bands.count = static_cast<int>(width_bytes.size());
  split_columns_kernel<<<grid_for(rows * row_bytes / 4), kThreads>>>(
      rows, row_bytes / 4, reinterpret_cast<const uint32_t*>(src), bands);
  launched("split_columns");
}

}  // namespace tfm::cuda
