// Embedding lookups and their gradient (ops/embedding.h): the backward groups each id's positions on
// the host, so that each row of the table's gradient is summed in position order.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "ops/cuda/common.cuh"
#include "ops/cuda/for_each.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {
namespace {

// One block per distinct id: its positions (in order) summed into its row of the table.
__global__ void embedding_backward_kernel(int64_t d, const int32_t* unique_ids, const int64_t* starts,
                                          const int64_t* positions, const float* dout, float s, float* dtable) {
  const int64_t u = blockIdx.x;
  float* row = dtable + static_cast<int64_t>(unique_ids[u]) * d;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
    float acc = row[c];
    for (int64_t j = starts[u]; j < starts[u + 1]; ++j) acc += s * dout[positions[j] * d + c];
    row[c] = acc;
  }
}

}  // namespace

void embedding(int64_t n, int64_t d, const int32_t* ids, const float* table, double scale, float* out) {
  const auto s = static_cast<float>(scale);
  for_each("embedding", n * d, [=] __device__(int64_t i) {
    const int32_t id = ids[i / d];
    out[i] = id < 0 ? 0.0f : s * table[static_cast<int64_t>(id) * d + i % d];
  });
}

void embedding_backward(int64_t n, int64_t d, const int32_t* host_ids, const float* dout, double scale,
                        float* dtable) {
  // Group the positions by id on the host (a counting sort keeps each id's positions in order).
  int32_t top = -1;
  for (int64_t i = 0; i < n; ++i) top = std::max(top, host_ids[i]);
  if (top < 0) return;
  std::vector<int64_t> count(static_cast<size_t>(top) + 2, 0);
  for (int64_t i = 0; i < n; ++i)
    if (host_ids[i] >= 0) ++count[static_cast<size_t>(host_ids[i]) + 1];
  std::vector<int32_t> unique;
  std::vector<int64_t> starts{0};
  for (int32_t id = 0; id <= top; ++id)
    if (count[static_cast<size_t>(id) + 1] > 0) {
      unique.push_back(id);
      starts.push_back(starts.back() + count[static_cast<size_t>(id) + 1]);
    }
  for (size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];  // first slot of each id
  std::vector<int64_t> positions(static_cast<size_t>(starts.back()));
  for (int64_t i = 0; i < n; ++i)
    if (host_ids[i] >= 0) positions[static_cast<size_t>(count[static_cast<size_t>(host_ids[i])]++)] = i;
  const size_t u = unique.size();
  auto memory = scratch(sizeof(int64_t) * (starts.size() + positions.size()) + sizeof(int32_t) * u);
  auto* dstarts = static_cast<int64_t*>(memory.get());
  int64_t* dpositions = dstarts + starts.size();
  auto* dunique = reinterpret_cast<int32_t*>(dpositions + positions.size());
  check(cudaMemcpy(dstarts, starts.data(), sizeof(int64_t) * starts.size(), cudaMemcpyHostToDevice), "embedding_backward");
  check(cudaMemcpy(dpositions, positions.data(), sizeof(int64_t) * positions.size(), cudaMemcpyHostToDevice),
        "embedding_backward");
  check(cudaMemcpy(dunique, unique.data(), sizeof(int32_t) * u, cudaMemcpyHostToDevice), "embedding_backward");
  embedding_backward_kernel<<<static_cast<unsigned>(u), 128>>>(d, dunique, dstarts, dpositions, dout,
                                                              static_cast<float>(scale), dtable);
  launched("embedding_backward");
}

}  // namespace tfm::cuda
