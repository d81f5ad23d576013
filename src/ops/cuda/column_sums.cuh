#pragma once
// Sums over the columns of a rows × cols function (the bias and layer-norm gradients): partial sums of
// fixed row chunks, then the chunks in order, so the same inputs give the same bits on every run.
#include <cstdint>

#include "ops/cuda/common.cuh"

namespace tfm::cuda {

constexpr int kColTile = 32, kRowLanes = 8, kChunks = 64;

// partial[chunk, c] = Σ over the chunk's rows r of f(r, c); rows split into kChunks fixed chunks.
template <class F>
__global__ void column_partials(int64_t rows, int64_t cols, F f, double* partial) {
  __shared__ double tile[kRowLanes][kColTile];
  const int64_t c = blockIdx.x * int64_t{kColTile} + threadIdx.x;
  const int64_t chunk = blockIdx.y, per = (rows + kChunks - 1) / kChunks;
  const int64_t r0 = chunk * per, r1 = min(rows, r0 + per);
  double acc = 0;
  if (c < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) acc += f(r, c);
  tile[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    double s = 0;
    for (int l = 0; l < kRowLanes; ++l) s += tile[l][threadIdx.x];
    partial[chunk * cols + c] = s;
  }
}

static __global__ void add_column_sums(int64_t cols, const double* partial, float* out) {
  const int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (c >= cols) return;
  double s = 0;
  for (int k = 0; k < kChunks; ++k) s += partial[k * cols + c];
  out[c] += static_cast<float>(s);
}

// out[c] += Σ_r f(r, c).
template <class F>
void add_column_sums(const char* what, int64_t rows, int64_t cols, F f, float* out) {
  if (rows <= 0 || cols <= 0) return;
  auto partial = scratch(sizeof(double) * kChunks * cols);
  auto* p = static_cast<double*>(partial.get());
  column_partials<<<dim3(static_cast<unsigned>((cols + kColTile - 1) / kColTile), kChunks), dim3(kColTile, kRowLanes)>>>(
      rows, cols, f, p);
  launched(what);
  add_column_sums<<<grid_for(cols), kThreads>>>(cols, p, out);
  launched(what);
}

}  // namespace tfm::cuda
