// The CUDA kernels of ops/cuda/kernels.h other than the products and attention (products.cu):
// elementwise ops, dropout, layer norm, softmax, the loss, embeddings, Adam and byte moves. Each one
// follows the arithmetic of its CPU kernel (ops/cpu/simd), sums in double where the CPU's are, and
// reduces in a fixed order: the same inputs give the same bits on every run.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <array>
#include <cmath>
#include <vector>

#include "ops/cuda/common.cuh"

namespace tfm::cuda {
namespace {

using ops::Activation;

// y[i] = f(i) for i < n, in a grid-stride loop.
template <class F>
__global__ void for_each_kernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) f(i);
}
template <class F>
void for_each(const char* what, int64_t n, F f) {
  if (n <= 0) return;
  for_each_kernel<<<grid_for(n), kThreads>>>(n, f);
  launched(what);
}

// ---- activations (ops/activation.h), in double as the CPU's reference definitions ----
__device__ inline double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

__device__ inline float activate_one(Activation act, float xf) {
  const double x = xf;
  switch (act) {
    case Activation::kNone: return xf;
    case Activation::kRelu: return xf > 0.0f ? xf : 0.0f;
    case Activation::kSwish: return static_cast<float>(x * sigmoid(x));
    case Activation::kGelu: return static_cast<float>(0.5 * x * (1.0 + erf(x * 0.70710678118654752440)));
    case Activation::kGeluSigmoid: return static_cast<float>(x * sigmoid(1.702 * x));
  }
  return xf;
}

__device__ inline float derivative(Activation act, float xf) {
  const double x = xf;
  switch (act) {
    case Activation::kNone: return 1.0f;
    case Activation::kRelu: return xf > 0.0f ? 1.0f : 0.0f;
    case Activation::kSwish: {
      const double s = sigmoid(x);
      return static_cast<float>(s * (1.0 + x * (1.0 - s)));
    }
    case Activation::kGelu: {
      const double cdf = 0.5 * (1.0 + erf(x * 0.70710678118654752440));
      const double pdf = 0.39894228040143267794 * exp(-0.5 * x * x);
      return static_cast<float>(cdf + x * pdf);
    }
    case Activation::kGeluSigmoid: {
      const double u = 1.702 * x, s = sigmoid(u);
      return static_cast<float>(s + u * s * (1.0 - s));
    }
  }
  return 1.0f;
}

// ---- dropout: one Philox block per four consecutive elements, as the CPU's ----
__global__ void dropout_kernel(int64_t n, const float* x, float threshold, float keep_scale, RngStream rng, float* y) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < blocks; j += int64_t{gridDim.x} * blockDim.x) {
    const std::array<float, 4> u = rng.uniform4(static_cast<uint64_t>(j));
    for (int l = 0; l < 4; ++l) {
      const int64_t i = 4 * j + l;
      if (i < n) y[i] = u[l] >= threshold ? __fmul_rn(x[i], keep_scale) : 0.0f;
    }
  }
}

// ---- sums over columns: partial sums of fixed row chunks, then the chunks in order ----
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

__global__ void add_column_sums(int64_t cols, const double* partial, float* out) {
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

// ---- rows: one block per row ----
constexpr int kRowThreads = 256;

__global__ void layer_norm_kernel(int64_t d, const float* x, const float* gamma, const float* beta, double eps,
                                  float* y, float* mean, float* rstd) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * d;
  float* yr = y + r * d;
  double s = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) s += xr[i];
  const double mu = block_sum(s, shared) / double(d);
  double ss = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) ss += (double(xr[i]) - mu) * (double(xr[i]) - mu);
  const double rs = 1.0 / sqrt(block_sum(ss, shared) / double(d) + eps);
  const float m = static_cast<float>(mu), rsd = static_cast<float>(rs);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = (xr[i] - m) * rsd * gamma[i] + beta[i];
  if (threadIdx.x == 0) {
    mean[r] = m;
    rstd[r] = rsd;
  }
}

__global__ void layer_norm_backward_kernel(int64_t d, const float* dy, const float* x, const float* gamma,
                                           const float* mean, const float* rstd, float* dx) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float* dyr = dy + r * d;
  const float* xr = x + r * d;
  float* dxr = dx + r * d;
  const float m = mean[r], rs = rstd[r];
  double sum_g = 0, sum_gx = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const double g = double(dyr[i]) * gamma[i];
    sum_g += g;
    sum_gx += g * (double(xr[i] - m) * rs);
  }
  const float mean_g = static_cast<float>(block_sum(sum_g, shared) / double(d));
  const float mean_gx = static_cast<float>(block_sum(sum_gx, shared) / double(d));
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const float xhat = (xr[i] - m) * rs;
    dxr[i] += rs * (dyr[i] * gamma[i] - mean_g - xhat * mean_gx);
  }
}

__global__ void softmax_kernel(int64_t cols, const float* x, float* y) {
  __shared__ float fshared[32];
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * cols;
  float* yr = y + r * cols;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) mx = fmaxf(mx, xr[i]);
  mx = block_max(mx, fshared);
  double s = 0;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) s += expf(xr[i] - mx);
  const float inv = static_cast<float>(1.0 / block_sum(s, shared));
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = expf(xr[i] - mx) * inv;
}

__global__ void softmax_backward_kernel(int64_t cols, const float* y, const float* dy, float* dx) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float *yr = y + r * cols, *dyr = dy + r * cols;
  float* dxr = dx + r * cols;
  double dot = 0;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) dot += double(dyr[i]) * yr[i];
  const float d = static_cast<float>(block_sum(dot, shared));
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) dxr[i] += yr[i] * (dyr[i] - d);
}

__global__ void cross_entropy_kernel(int64_t vocab, const float* logits, const int32_t* targets, double smoothing,
                                     int32_t ignore_index, float* lse, double* row_loss) {
  __shared__ float fshared[32];
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const float* z = logits + r * vocab;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) mx = fmaxf(mx, z[i]);
  mx = block_max(mx, fshared);
  double se = 0, sz = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    se += expf(z[i] - mx);
    sz += z[i];
  }
  se = block_sum(se, shared);
  sz = block_sum(sz, shared);
  if (threadIdx.x == 0) {
    const double l = double(mx) + log(se);
    lse[r] = static_cast<float>(l);
    const int32_t t = targets[r];
    row_loss[r] = t == ignore_index ? 0.0 : l - (1.0 - smoothing) * double(z[t]) - smoothing / double(vocab) * sz;
  }
}

__global__ void cross_entropy_backward_kernel(int64_t vocab, const float* logits, const int32_t* targets,
                                              const float* lse, int32_t ignore_index, float g, float on, float off,
                                              float* dlogits, bool accumulate) {
  const int64_t r = blockIdx.x;
  const float* z = logits + r * vocab;
  float* dz = dlogits + r * vocab;
  const int32_t t = targets[r];
  if (t == ignore_index) {
    if (!accumulate)
      for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) dz[i] = 0.0f;
    return;
  }
  const float l = lse[r];
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    float v = g * expf(z[i] - l) - off;
    if (i == t) v -= on;
    dz[i] = accumulate ? dz[i] + v : v;
  }
}

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

__global__ void partial_sum_squares(int64_t n, const float* x, double* partial) {
  __shared__ double shared[32];
  double s = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    s += double(x[i]) * x[i];
  s = block_sum(s, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// ---- top-k of a decoding step (ops/top_k.h): one block per row ----
struct BannedIds {
  int32_t n;
  int32_t id[Kernels::kMaxBanned];
};

// (a_value, a_id) ranks before (b_value, b_id): a higher value, or the same value and a lower id;
// an id < 0 is no candidate and ranks last.
__device__ inline bool ranks_before(float a_value, int32_t a_id, float b_value, int32_t b_id) {
  if (a_id < 0) return false;
  if (b_id < 0) return true;
  return a_value > b_value || (a_value == b_value && a_id < b_id);
}

// Each thread keeps the best k of its columns (visited in increasing id, so that of equal values the
// lower id stays first, as the CPU's insertion); the row's best k are then taken from the threads'
// lists one at a time, by a block-wide pick of the best head. The sum Σ exp(z − M) runs in double over
// a second pass (M: the row's largest value), in a fixed order.
template <int KCAP>
__global__ void top_k_kernel(int64_t V, int k, const float* logits, BannedIds banned, double* logp, int32_t* ids,
                             double* lse) {
  __shared__ double shared_sum[32];
  __shared__ float shared_max[32], shared_value[32];
  __shared__ int32_t shared_id[32];
  const float* z = logits + static_cast<int64_t>(blockIdx.x) * V;
  float value[KCAP];
  int32_t id[KCAP];
  int n = 0;
  float m = -INFINITY;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {
    const float x = z[v];
    m = fmaxf(m, x);
    if (isnan(x) || (n == k && x <= value[k - 1])) continue;
    bool is_banned = false;
    for (int b = 0; b < banned.n; ++b) is_banned = is_banned || banned.id[b] == v;
    if (is_banned) continue;
    int pos = n < k ? n : k - 1;
    while (pos > 0 && value[pos - 1] < x) {
      value[pos] = value[pos - 1];
      id[pos] = id[pos - 1];
      --pos;
    }
    value[pos] = x;
    id[pos] = static_cast<int32_t>(v);
    n += n < k;
  }
  const float M = block_max(m, shared_max);
  double s = 0;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {
    const float x = z[v];
    if (x != -INFINITY) s += exp(double(x) - double(M));  // NaN stays: the sum is then NaN, as the CPU's
  }
  s = block_sum(s, shared_sum);
  const double l = double(M) + log(s);
  if (threadIdx.x == 0) lse[blockIdx.x] = l;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  int head = 0;
  for (int j = 0; j < k; ++j) {
    float best_value = head < n ? value[head] : 0.0f;
    int32_t best_id = head < n ? id[head] : -1;
    for (int o = 16; o > 0; o >>= 1) {  // ids are unique: every lane ends with the same pick
      const float other_value = __shfl_xor_sync(0xffffffffu, best_value, o);
      const int32_t other_id = __shfl_xor_sync(0xffffffffu, best_id, o);
      if (ranks_before(other_value, other_id, best_value, best_id)) {
        best_value = other_value;
        best_id = other_id;
      }
    }
    __syncthreads();  // the previous pick's reads of shared_value are done
    if (lane == 0) {
      shared_value[warp] = best_value;
      shared_id[warp] = best_id;
    }
    __syncthreads();
    best_value = shared_value[0];
    best_id = shared_id[0];
    for (int w = 1; w < warps; ++w)
      if (ranks_before(shared_value[w], shared_id[w], best_value, best_id)) {
        best_value = shared_value[w];
        best_id = shared_id[w];
      }
    const int64_t out = static_cast<int64_t>(blockIdx.x) * k + j;
    if (best_id < 0) {  // fewer than k allowed columns: the rest is empty (the same for every thread)
      for (int64_t e = out + threadIdx.x; e < static_cast<int64_t>(blockIdx.x + 1) * k; e += blockDim.x) {
        logp[e] = -INFINITY;
        ids[e] = -1;
      }
      return;
    }
    if (head < n && id[head] == best_id) ++head;
    if (threadIdx.x == 0) {
      logp[out] = double(best_value) - l;
      ids[out] = best_id;
    }
  }
}

template <int KCAP>
void launch_top_k(int64_t rows, int64_t V, int64_t k, const float* logits, const BannedIds& banned, double* logp,
                  int32_t* ids, double* lse) {
  top_k_kernel<KCAP><<<static_cast<unsigned>(rows), kRowThreads>>>(V, static_cast<int>(k), logits, banned, logp, ids,
                                                                   lse);
  launched("top_k_logprobs");
}

class CudaKernels final : public Kernels {
 public:
  void synchronize() override { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

  void add(int64_t n, const float* a, const float* b, float* y) override {
    for_each("add", n, [=] __device__(int64_t i) { y[i] = a[i] + b[i]; });
  }
  void add_to(int64_t n, const float* x, float* y) override {
    for_each("add_to", n, [=] __device__(int64_t i) { y[i] += x[i]; });
  }
  void scale(int64_t n, const float* x, float alpha, float* y) override {
    for_each("scale", n, [=] __device__(int64_t i) { y[i] = alpha * x[i]; });
  }
  void bias_add(int64_t rows, int64_t cols, const float* x, const float* bias, float* y) override {
    for_each("bias_add", rows * cols, [=] __device__(int64_t i) { y[i] = x[i] + bias[i % cols]; });
  }
  void bias_activate(int64_t rows, int64_t cols, const float* x, const float* bias, Activation act,
                     float* y) override {
    for_each("bias_activate", rows * cols,
             [=] __device__(int64_t i) { y[i] = activate_one(act, x[i] + bias[i % cols]); });
  }
  void bias_add_backward(int64_t rows, int64_t cols, const float* dy, float* dbias) override {
    add_column_sums("bias_add_backward", rows, cols, [=] __device__(int64_t r, int64_t c) { return double(dy[r * cols + c]); },
                    dbias);
  }
  void relu(int64_t n, const float* x, float* y) override {
    for_each("relu", n, [=] __device__(int64_t i) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; });
  }
  void relu_backward(int64_t n, const float* y, const float* dy, float* dx) override {
    for_each("relu_backward", n, [=] __device__(int64_t i) {
      if (y[i] > 0.0f) dx[i] += dy[i];
    });
  }
  void activate(int64_t n, Activation act, const float* x, float* y) override {
    for_each("activate", n, [=] __device__(int64_t i) { y[i] = activate_one(act, x[i]); });
  }
  void activation_backward(int64_t n, Activation act, const float* pre, const float* dy, float* dx) override {
    for_each("activation_backward", n, [=] __device__(int64_t i) { dx[i] += dy[i] * derivative(act, pre[i]); });
  }
  void dropout(int64_t n, const float* x, double p, const RngStream& rng, float* y) override {
    cuda::dropout(n, x, p, rng, y);
  }
  double sum_squares(int64_t n, const float* x) override {
    constexpr int kBlocks = 1024;
    auto partial = scratch(sizeof(double) * kBlocks);
    auto* p = static_cast<double*>(partial.get());
    partial_sum_squares<<<kBlocks, kThreads>>>(n, x, p);
    launched("sum_squares");
    std::vector<double> host(kBlocks);
    check(cudaMemcpy(host.data(), p, sizeof(double) * kBlocks, cudaMemcpyDeviceToHost), "sum_squares: copy");
    double s = 0;
    for (double v : host) s += v;
    return s;
  }

  void gemm(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
            int64_t stride_a, const float* b, int64_t stride_b, float beta, float* c, int64_t stride_c,
            bool bf16) override {
    if (k == 0) {  // an empty sum: C = beta · C (cuBLAS refuses the zero leading dimensions)
      const int64_t count = batch * m * n;  // the ops' C is contiguous
      if (beta == 0.0f) check(cudaMemsetAsync(c, 0, sizeof(float) * static_cast<size_t>(count)), "gemm");
      else scale(count, c, beta, c);
      return;
    }
    gemm_strided(trans_a, trans_b, m, n, k, alpha, a, trans_a ? m : k, stride_a, b, trans_b ? k : n, stride_b, beta, c,
                 n, stride_c, batch, bf16);
  }
  void round_to_bf16(int64_t n, const float* x, float* y) override { cuda::round_to_bf16(n, x, y); }
  bool linear(int64_t rows, int64_t in, int64_t out, const float* x, const float* w, const float* bias, Activation act,
              float* y, bool bf16, const float* residual) override {
    if (act != Activation::kNone && act != Activation::kRelu) return false;
    if (residual != nullptr && act != Activation::kNone) return false;
    return cuda::linear_forward(rows, in, out, x, w, bias, act == Activation::kRelu, y, bf16, residual);
  }
  int64_t residual_products() const override { return cuda::residual_products(); }
  std::shared_ptr<const void> pack_bf16(int64_t out, int64_t in, const float* w) override {
    return cuda::pack_bf16(out * in, w);
  }
  void linear_packed_bf16(int64_t rows, int64_t in, int64_t out, const float* x, const void* w16, const float* bias,
                          Activation act, float* y, const float* residual) override {
    if (rows == 0 || out == 0) return;
    const bool relu = act == Activation::kRelu;
    // With a bias, one cuBLASLt product with it (and the residual) in the epilogue; without (the
    // output projection), cuBLAS's product, as the plain weights' (cuBLASLt's heuristic chose a
    // slower one for decoding's 128 × 32,000 × 512 logits on the H100: greedy 75,000 against 89,000
    // tokens/s).
    if (in > 0 && bias != nullptr && (residual == nullptr || act == Activation::kNone) &&
        cuda::linear_forward_packed(rows, in, out, x, w16, bias, relu, y, residual)) {
      if (!relu && act != Activation::kNone) activate(rows * out, act, y, y);  // no epilogue for it
      return;
    }
    cuda::gemm_packed_bf16(rows, in, out, x, w16, y);
    if (bias != nullptr) bias_activate(rows, out, y, bias, act, y);
    else if (act != Activation::kNone) activate(rows * out, act, y, y);
    if (residual != nullptr) add(rows * out, residual, y, y);
  }
  void linear_backward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w, const float* dy,
                       float* dx, float* dw, float* dbias, bool bf16) override {
    if (rows == 0 || out == 0) return;  // every sum is empty: nothing to add
    if (in == 0) {  // no weights, but the bias's gradient
      bias_add_backward(rows, out, dy, dbias);
      return;
    }
    if (bf16) {
      // One pass over dy: the bias gradient's column sums (of float32 dy, its definition) also
      // write dy rounded to bfloat16 for the two products.
      auto memory = scratch(sizeof(__nv_bfloat16) * static_cast<size_t>(rows * out));
      auto* dy16 = static_cast<__nv_bfloat16*>(memory.get());
      add_column_sums("linear_backward", rows, out, [=] __device__(int64_t r, int64_t c) {
        const float g = dy[r * out + c];
        dy16[r * out + c] = __float2bfloat16_rn(g);
        return double(g);
      }, dbias);
      cuda::linear_backward_bf16(rows, in, out, x, w, dy16, dx, dw);
      return;
    }
    if (dx != nullptr) gemm(1, false, false, rows, in, out, 1.0f, dy, 0, w, 0, 1.0f, dx, 0, false);
    // cuBLASLt writes the bias gradient; it is added here.
    auto memory = scratch(sizeof(float) * static_cast<size_t>(out));
    auto* bgrad = static_cast<float*>(memory.get());
    if (cuda::linear_weight_grad(rows, in, out, x, dy, dw, bgrad)) {
      add_to(out, bgrad, dbias);
      return;
    }
    gemm(1, true, false, out, in, rows, 1.0f, dy, 0, x, 0, 1.0f, dw, 0, false);
    bias_add_backward(rows, out, dy, dbias);
  }

  void attention(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                 const int32_t* key_lengths, const int32_t* key_rows, double dropout, const RngStream& rng,
                 float* probs, float* out) override {
    cuda::attention(d, q, k, v, causal, key_lengths, key_rows, dropout, rng, probs, out);
  }
  void attention_backward(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                          const int32_t* key_lengths, double dropout, const RngStream& rng, const float* probs,
                          const float* dout, float* dq, float* dk, float* dv) override {
    cuda::attention_backward(d, q, k, v, causal, key_lengths, dropout, rng, probs, dout, dq, dk, dv);
  }

  void layer_norm(int64_t rows, int64_t d, const float* x, const float* gamma, const float* beta, double eps, float* y,
                  float* mean, float* rstd) override {
    if (rows <= 0) return;
    layer_norm_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(d, x, gamma, beta, eps, y, mean, rstd);
    launched("layer_norm");
  }
  void layer_norm_backward(int64_t rows, int64_t d, const float* dy, const float* x, const float* gamma,
                           const float* mean, const float* rstd, float* dx, float* dgamma, float* dbeta) override {
    if (rows <= 0) return;
    layer_norm_backward_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(d, dy, x, gamma, mean, rstd, dx);
    launched("layer_norm_backward");
    add_column_sums("layer_norm_backward", rows, d, [=] __device__(int64_t r, int64_t c) {
      return double(dy[r * d + c] * ((x[r * d + c] - mean[r]) * rstd[r]));
    }, dgamma);
    add_column_sums("layer_norm_backward", rows, d, [=] __device__(int64_t r, int64_t c) { return double(dy[r * d + c]); },
                    dbeta);
  }

  void softmax(int64_t rows, int64_t cols, const float* x, float* y) override {
    if (rows <= 0) return;
    softmax_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(cols, x, y);
    launched("softmax");
  }
  void softmax_backward(int64_t rows, int64_t cols, const float* y, const float* dy, float* dx) override {
    if (rows <= 0) return;
    softmax_backward_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(cols, y, dy, dx);
    launched("softmax_backward");
  }

  double cross_entropy(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets, double smoothing,
                       int32_t ignore_index, float* lse) override {
    if (rows <= 0) return 0.0;
    auto losses = scratch(sizeof(double) * rows);
    auto* l = static_cast<double*>(losses.get());
    cross_entropy_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(vocab, logits, targets, smoothing, ignore_index,
                                                                      lse, l);
    launched("cross_entropy");
    std::vector<double> host(static_cast<size_t>(rows));
    check(cudaMemcpy(host.data(), l, sizeof(double) * rows, cudaMemcpyDeviceToHost), "cross_entropy: copy");
    double total = 0;  // in row order, as the CPU's
    for (double x : host) total += x;
    return total;
  }
  void cross_entropy_backward(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                              const float* lse, double smoothing, int32_t ignore_index, double dloss, float* dlogits,
                              bool accumulate) override {
    if (rows <= 0) return;
    const auto off = static_cast<float>(dloss * smoothing / double(vocab));
    const auto on = static_cast<float>(dloss * (1.0 - smoothing));
    cross_entropy_backward_kernel<<<static_cast<unsigned>(rows), kRowThreads>>>(
        vocab, logits, targets, lse, ignore_index, static_cast<float>(dloss), on, off, dlogits, accumulate);
    launched("cross_entropy_backward");
  }

  void embedding(int64_t n, int64_t d, const int32_t* ids, const float* table, double scale, float* out) override {
    const auto s = static_cast<float>(scale);
    for_each("embedding", n * d, [=] __device__(int64_t i) {
      const int32_t id = ids[i / d];
      out[i] = id < 0 ? 0.0f : s * table[static_cast<int64_t>(id) * d + i % d];
    });
  }
  void embedding_backward(int64_t n, int64_t d, const int32_t* host_ids, const float* dout, double scale,
                          float* dtable) override {
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

  void adam_step(int64_t n, float* params, const float* grads, float* m, float* v, double lr, double beta1,
                 double beta2, double eps, int64_t step) override {
    const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
    const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
    const auto step_size = static_cast<float>(lr / bc1), inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
    const auto b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2), e = static_cast<float>(eps);
    for_each("adam_step", n, [=] __device__(int64_t i) {
      const float g = grads[i];
      m[i] = b1 * m[i] + (1.0f - b1) * g;
      v[i] = b2 * v[i] + (1.0f - b2) * g * g;
      params[i] -= step_size * m[i] / (sqrtf(v[i]) * inv_sqrt_bc2 + e);
    });
  }

  bool top_k_logprobs(int64_t rows, int64_t V, int64_t k, const float* logits, const int32_t* banned_ids,
                      int64_t n_banned, double* logp, int32_t* ids, double* lse) override {
    if (k < 1 || k > kMaxTopK || n_banned > kMaxBanned) return false;
    if (rows <= 0) return true;
    BannedIds banned{static_cast<int32_t>(n_banned), {}};
    for (int64_t b = 0; b < n_banned; ++b) banned.id[b] = banned_ids[b];
    if (k == 1) launch_top_k<1>(rows, V, k, logits, banned, logp, ids, lse);
    else if (k <= 4) launch_top_k<4>(rows, V, k, logits, banned, logp, ids, lse);
    else if (k <= 8) launch_top_k<8>(rows, V, k, logits, banned, logp, ids, lse);
    else launch_top_k<kMaxTopK>(rows, V, k, logits, banned, logp, ids, lse);
    return true;
  }

  void copy_rows(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, const char* src,
                 char* dst) override {
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
                    char* dst) override {
    if (rows <= 0 || width_bytes <= 0) return;
    check(cudaMemcpy2DAsync(dst, static_cast<size_t>(width_bytes), src + offset_bytes, static_cast<size_t>(row_bytes),
                            static_cast<size_t>(width_bytes), static_cast<size_t>(rows), cudaMemcpyDeviceToDevice),
          "copy_columns");
  }
  void split_columns(int64_t rows, int64_t row_bytes, const std::vector<int64_t>& width_bytes,
                     const std::vector<char*>& dst, const char* src) override {
    if (rows <= 0 || row_bytes <= 0) return;
    auto word = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 4 == 0; };
    bool one_kernel = width_bytes.size() <= static_cast<size_t>(kMaxBands) && row_bytes % 4 == 0 && word(src);
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
};

}  // namespace

void dropout(int64_t n, const float* x, double p, const RngStream& rng, float* y) {
  if (n <= 0) return;
  dropout_kernel<<<grid_for((n + 3) / 4), kThreads>>>(n, x, static_cast<float>(p), static_cast<float>(1.0 / (1.0 - p)),
                                                      rng, y);
  launched("dropout");
}

Kernels* kernels() {
  // Only where the machine has a CUDA device (the memory backend is made only then).
  static Kernels* const k = builtin_device_memory(Device::CUDA) != nullptr ? new CudaKernels : nullptr;
  return k;
}

}  // namespace tfm::cuda
