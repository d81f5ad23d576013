// Products through cuBLAS and the attention built on them (ops/cuda/kernels.h).
//
// cuBLAS is column-major: a row-major matrix is its transpose there. So the row-major product
// C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ, B first, with every leading dimension as stored.
// Float32 products use cuBLAS's default math (no TF32): sums in float32 of float32 products. Bf16
// products round A and B to bfloat16 (round to nearest even) and sum in float32.
//
// Attention: Q·Kᵀ, the mask and softmax, dropout and P̃·V as separate passes, the products batched
// over the batch entries of one head (H calls per product), or over one entry's heads when the
// beams of a sentence share its keys (kv_group > 1). A decoding cache's shared slabs (key_rows) go
// through one kernel per (entry, head): one query, a gather of its keys.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include "ops/cuda/common.cuh"

namespace tfm::cuda {
namespace {

void check_blas(cublasStatus_t rc, const char* what) {
  if (rc == CUBLAS_STATUS_SUCCESS) return;
  throw Error(cat("cuBLAS: ", what, " failed: ", cublasGetStatusString(rc), " (", static_cast<int>(rc), ")"));
}

// One handle for the process, made on first use (never destroyed: tensors may outlive statics).
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    check_blas(cublasCreate(&created), "cublasCreate");
    check_blas(cublasSetMathMode(created, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    return created;
  }();
  return h;
}

__global__ void to_bf16_kernel(int64_t n, const float* x, __nv_bfloat16* y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

// The same, four elements a thread (x 16-byte and y 8-byte aligned, n4 = n / 4 groups); the last
// n % 4 elements by the first threads.
__global__ void to_bf16_vector_kernel(int64_t n4, int64_t n, const float4* x, __nv_bfloat162* y) {
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x, step = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = first; i < n4; i += step) {
    const float4 v = x[i];
    y[2 * i] = __floats2bfloat162_rn(v.x, v.y);
    y[2 * i + 1] = __floats2bfloat162_rn(v.z, v.w);
  }
  const auto* xs = reinterpret_cast<const float*>(x);
  auto* ys = reinterpret_cast<__nv_bfloat16*>(y);
  if (first < n - 4 * n4) ys[4 * n4 + first] = __float2bfloat16_rn(xs[4 * n4 + first]);
}

// y[i] = bf16(x[i]), i < n: the rounding of a product's inputs.
void to_bf16(int64_t n, const float* x, __nv_bfloat16* y) {
  if (n <= 0) return;
  if (reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0) {
    const int64_t n4 = n / 4;
    to_bf16_vector_kernel<<<grid_for(std::max<int64_t>(n4, 1)), kThreads>>>(
        n4, n, reinterpret_cast<const float4*>(x), reinterpret_cast<__nv_bfloat162*>(y));
  } else {
    to_bf16_kernel<<<grid_for(n), kThreads>>>(n, x, y);
  }
}

__global__ void round_bf16_kernel(int64_t n, const float* x, float* y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = __bfloat162float(__float2bfloat16_rn(x[i]));
}

// The elements a strided batch spans: batch entries `stride` apart, each `rows` rows `ld` apart.
int64_t span(int64_t batch, int64_t stride, int64_t rows, int64_t cols, int64_t ld) {
  const int64_t one = rows > 0 ? (rows - 1) * ld + cols : 0;
  return stride > 0 ? (batch - 1) * stride + one : one;
}


// ---- linear layers through cuBLASLt, the bias, ReLU and bias gradient in the product's epilogue ----

cublasLtHandle_t lt_handle() {
  static cublasLtHandle_t h = [] {
    cublasLtHandle_t created = nullptr;
    check_blas(cublasLtCreate(&created), "cublasLtCreate");
    return created;
  }();
  return h;
}

// The largest power of two (up to 256) that divides the address: cuBLASLt picks its kernels by it.
int alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int align = 256;
  while (align > 1 && a % static_cast<uintptr_t>(align) != 0) align /= 2;
  return align;
}

// One product's description and the algorithm cuBLASLt's heuristic chose for it, made once per
// shape (training repeats a few shapes): none when cuBLASLt has no algorithm for it.
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
};

constexpr size_t kLtWorkspace = size_t{32} << 20;

// Column-major D[m, n] = op(A) · op(B) (+ C with beta 1), the epilogue's vector of `m` (bias) or
// `n` (BGRADB) at `vector`. Types: A and B bf16 or float32, C and D float32, float32 sums. `c` is
// the least aligned of C and D (the same layout); out_of_place: C is not D, so the algorithm must
// write D elsewhere (CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT).
const LtPlan& lt_plan(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                      int64_t ldc, bool bf16, cublasLtEpilogue_t epilogue, const void* a, const void* b, const void* c,
                      const void* vector, bool out_of_place) {
  using Key =
      std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int, int, int, int, int, bool>;
  static std::map<Key, LtPlan> plans;
  const Key key{trans_a, trans_b, m, n, k, lda, ldb, ldc, bf16, static_cast<int>(epilogue),
                alignment(a), alignment(b), alignment(c), alignment(vector), out_of_place};
  const auto it = plans.find(key);
  if (it != plans.end()) return it->second;
  LtPlan p;
  const cudaDataType_t in = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  check_blas(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_blas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
  check_blas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
  check_blas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
             "EPILOGUE");
  check_blas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector, sizeof vector),
             "BIAS_POINTER");
  check_blas(cublasLtMatrixLayoutCreate(&p.a, in, trans_a ? k : m, trans_a ? m : k, lda), "layout A");
  check_blas(cublasLtMatrixLayoutCreate(&p.b, in, trans_b ? n : k, trans_b ? k : n, ldb), "layout B");
  check_blas(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, m, n, ldc), "layout C");
  cublasLtMatmulPreference_t pref = nullptr;
  check_blas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const size_t workspace = kLtWorkspace;
  check_blas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                  sizeof workspace),
             "MAX_WORKSPACE_BYTES");
  const uint32_t align_a = alignment(a), align_b = alignment(b), align_c = alignment(c);
  check_blas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
                                                  sizeof align_a), "MIN_ALIGNMENT_A");
  check_blas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
                                                  sizeof align_b), "MIN_ALIGNMENT_B");
  check_blas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c,
                                                  sizeof align_c), "MIN_ALIGNMENT_C");
  check_blas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c,
                                                  sizeof align_c), "MIN_ALIGNMENT_D");
  // The heuristic's first choice; out of place, its first that can write D apart from C.
  constexpr int kCandidates = 8;
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int count = 0;
  const cublasStatus_t rc = cublasLtMatmulAlgoGetHeuristic(lt_handle(), p.op, p.a, p.b, p.c, p.c, pref,
                                                           out_of_place ? kCandidates : 1, results, &count);
  cublasLtMatmulPreferenceDestroy(pref);
  for (int i = 0; rc == CUBLAS_STATUS_SUCCESS && i < count && !p.found; ++i) {
    int32_t apart = 1;
    size_t written = 0;
    if (out_of_place && cublasLtMatmulAlgoCapGetAttribute(&results[i].algo, CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT,
                                                          &apart, sizeof apart, &written) != CUBLAS_STATUS_SUCCESS)
      apart = 0;
    if (apart == 0) continue;
    p.found = true;
    p.algo = results[i].algo;
  }
  return plans.emplace(key, p).first->second;
}

std::atomic<int64_t> residual_count{0};  // products with a residual as C (residual_products)

// a16: with bf16, A already rounded to bfloat16 (inference's packed weights), used instead of a.
// c_in: the product's C when it is not D (c), then with beta 1 (a residual connection's input).
bool lt_matmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc, bool bf16, cublasLtEpilogue_t epilogue,
               const float* vector, const __nv_bfloat16* a16_given = nullptr, const float* c_in = nullptr) {
  if (m <= 0 || n <= 0 || k <= 0) return false;
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  if (m > kMaxInt || n > kMaxInt || k > kMaxInt) return false;
  const void* a_in = a;
  const void* b_in = b;
  std::shared_ptr<void> memory;
  if (bf16) {  // A and B rounded into bfloat16 copies (contiguous: lda, ldb their column lengths)
    const int64_t na = a16_given != nullptr ? 0 : lda * (trans_a ? m : k), nb = ldb * (trans_b ? k : n);
    memory = scratch(sizeof(__nv_bfloat16) * static_cast<size_t>(na + nb + 128));
    auto* a16 = static_cast<__nv_bfloat16*>(memory.get());
    __nv_bfloat16* b16 = a16 + (na + 127) / 128 * 128;  // 256-byte aligned
    if (a16_given == nullptr) to_bf16(na, a, a16);
    to_bf16(nb, b, b16);
    launched("cuBLASLt product (bf16 inputs)");
    a_in = a16_given != nullptr ? static_cast<const void*>(a16_given) : a16;
    b_in = b16;
  }
  // The plans are shared and their bias pointer set per call: one call at a time.
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  const float* c_read = c_in != nullptr ? c_in : c;
  if (c_in != nullptr) beta = 1.0f;
  // The plan for the less aligned of C and D: both must meet the alignment it was chosen for.
  const float* c_align = alignment(c_read) < alignment(c) ? c_read : c;
  const LtPlan& p =
      lt_plan(trans_a, trans_b, m, n, k, lda, ldb, ldc, bf16, epilogue, a_in, b_in, c_align, vector, c_read != c);
  if (!p.found) return false;
  check_blas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector, sizeof vector),
             "BIAS_POINTER");
  const float alpha = 1.0f;
  auto workspace = scratch(kLtWorkspace);
  const cublasStatus_t rc = cublasLtMatmul(lt_handle(), p.op, &alpha, a_in, p.a, b_in, p.b, &beta, c_read, p.c, c,
                                           p.c, &p.algo, workspace.get(), kLtWorkspace, nullptr);
  if (rc == CUBLAS_STATUS_NOT_SUPPORTED) return false;  // the caller's plain product then
  check_blas(rc, "cublasLtMatmul");
  if (c_in != nullptr) residual_count.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// ---- attention ----

// Keys query t of entry b sees: the first n, n = min(length_b, t + 1 + S − T) (causal), ≥ 0.
__device__ inline int64_t visible_keys(int64_t keys, int64_t queries, int64_t b, int64_t t, bool causal,
                                       const int32_t* key_lengths) {
  int64_t n = key_lengths ? min(static_cast<int64_t>(key_lengths[b]), keys) : keys;
  if (causal) n = min(n, t + 1 + keys - queries);
  return n > 0 ? n : 0;
}

// A row of `keys` scores p, by the whole block: softmax over the first n, zeros after them (all
// zeros when n is 0). `fshared` and `shared` hold 32 values each.
__device__ inline void block_softmax(float* p, int64_t n, int64_t keys, float* fshared, double* shared) {
  float mx = -INFINITY;
  for (int64_t s = threadIdx.x; s < n; s += blockDim.x) mx = fmaxf(mx, p[s]);
  mx = block_max(mx, fshared);
  double sum = 0;
  for (int64_t s = threadIdx.x; s < n; s += blockDim.x) sum += expf(p[s] - mx);
  sum = block_sum(sum, shared);
  const float inv = n > 0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (int64_t s = threadIdx.x; s < keys; s += blockDim.x) p[s] = s < n ? expf(p[s] - mx) * inv : 0.0f;
}

// probs[b, h, t, :] (scores on entry) ← softmax over the visible keys, zeros after them.
__global__ void masked_softmax_kernel(int64_t heads, int64_t queries, int64_t keys, bool causal,
                                      const int32_t* key_lengths, float* probs) {
  __shared__ float fshared[32];
  __shared__ double shared[32];
  const int64_t row = blockIdx.x, t = row % queries, b = row / (queries * heads);
  float* p = probs + row * keys;
  const int64_t n = visible_keys(keys, queries, b, t, causal, key_lengths);
  block_softmax(p, n, keys, fshared, shared);
}

// dz[row, :] ← p ⊙ (dz − Σ dz ⊙ p), in place.
__global__ void softmax_rows_backward_kernel(int64_t keys, const float* probs, float* dz) {
  __shared__ double shared[32];
  const int64_t row = blockIdx.x;
  const float* p = probs + row * keys;
  float* g = dz + row * keys;
  double dot = 0;
  for (int64_t s = threadIdx.x; s < keys; s += blockDim.x) dot += double(g[s]) * p[s];
  const float d = static_cast<float>(block_sum(dot, shared));
  for (int64_t s = threadIdx.x; s < keys; s += blockDim.x) g[s] = p[s] * (g[s] - d);
}

// One query per (entry, head) against keys gathered from a decoding cache's slabs: k, v [S, R, H·d].
// The block's row of probs holds its scores, then its weights.
__global__ void decode_attention_kernel(AttentionDims d, const float* q, const float* k, const float* v, bool causal,
                                        const int32_t* key_lengths, const int32_t* key_rows, float scale, float* probs,
                                        float* out) {
  __shared__ float fshared[32];
  __shared__ double shared[32];
  const int64_t b = blockIdx.x / d.heads, h = blockIdx.x % d.heads;
  const int64_t ldq = d.heads * d.d_k, ldv = d.heads * d.d_v, S = d.keys;
  const float* qh = q + b * ldq + h * d.d_k;
  const int32_t* rows = key_rows + b * S;
  float* p = probs + blockIdx.x * S;
  const int64_t n = visible_keys(S, 1, b, 0, causal, key_lengths);
  // Scores: one warp per key.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int64_t s = warp; s < n; s += warps) {
    const float* kh = k + (s * d.kv_rows + rows[s]) * ldq + h * d.d_k;
    float dot = 0;
    for (int64_t c = lane; c < d.d_k; c += 32) dot += qh[c] * kh[c];
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    if (lane == 0) p[s] = dot * scale;
  }
  __syncthreads();
  block_softmax(p, n, S, fshared, shared);
  __syncthreads();
  for (int64_t c = threadIdx.x; c < d.d_v; c += blockDim.x) {
    float acc = 0;
    for (int64_t s = 0; s < n; ++s) acc += p[s] * v[(s * d.kv_rows + rows[s]) * ldv + h * d.d_v + c];
    out[b * ldv + h * d.d_v + c] = acc;
  }
}

// ---- fused attention: one block per (entry, head), its keys and values in shared memory ----
//
// For the sizes of sentence-level translation (S, T up to a few hundred): the whole head's K and V
// (and in the backward Q, dO and dZ) fit in shared memory, and one kernel does what the products,
// softmax and dropout passes do above. Rows are padded by four floats (kPad) so that lanes reading
// rows s = lane, lane + 32, ... at the same columns hit different banks, and so that rows stay 16-byte
// aligned for the four-float reads (d_k and d_v multiples of 4). Every sum runs in a fixed
// order within one thread or warp: the results do not change from run to run.
// Warps per block: the forward's, and the backward's (whose blocks need more shared memory, so
// fewer fit on an SM; 16 warps measured the same as 8 on the H100, 14.5 ms a base step).
constexpr int kPad = 4, kFusedWarps = 8, kBackwardWarps = 16;

// A row of S floats in shared memory, padded to a multiple of 4 (16-byte aligned rows).
__host__ __device__ inline int padded(int s) { return (s + 3) / 4 * 4; }

// Element g of the flat probs array kept by dropout (the CPU's rule), as a 0/1 factor times 1/(1−p).
__device__ inline float keep_factor(const RngStream& rng, uint64_t g, float threshold, float keep_scale) {
  return rng.uniform4(g / 4)[g % 4] >= threshold ? keep_scale : 0.0f;
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// rows × cols floats from `src` (rows `ld` apart) into shared `dst` (rows cols + kPad apart): one
// warp per row, lanes along it.
__device__ inline void load_rows(float* dst, const float* src, int rows, int cols, int64_t ld) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int r = warp; r < rows; r += warps)
    for (int c = lane; c < cols; c += 32) dst[r * (cols + kPad) + c] = src[r * ld + c];
}

// Σ_c a[c] · b[c], c < n, in order of c; kVec: read four at a time (n a multiple of 4, a and b
// 16-byte aligned): a quarter of the shared-memory reads, the same sums.
template <bool kVec>
__device__ inline float dot_rows(const float* a, const float* b, int n) {
  float acc = 0;
  if constexpr (kVec) {
    for (int c = 0; c < n; c += 4) {
      const float4 x = *reinterpret_cast<const float4*>(a + c), y = *reinterpret_cast<const float4*>(b + c);
      acc += x.x * y.x;
      acc += x.y * y.y;
      acc += x.z * y.z;
      acc += x.w * y.w;
    }
  } else {
    for (int c = 0; c < n; ++c) acc += a[c] * b[c];
  }
  return acc;
}

// out(c, Σ_i w[i · w_step] · m[i · ld + c]) for i < n, in order of i, for each column c < cols a lane
// of the warp takes: c = lane, lane + 32, ...; kVec: two neighbouring columns a lane (cols even, m's
// rows 8-byte aligned), so that each weight read serves two sums.
template <bool kVec, class Out>
__device__ inline void weighted_columns(const float* w, int w_step, const float* m, int ld, int n, int cols, Out&& out) {
  const int lane = threadIdx.x % 32;
  if constexpr (kVec) {
    for (int c = 2 * lane; c < cols; c += 64) {
      float a0 = 0, a1 = 0;
      for (int i = 0; i < n; ++i) {
        const float x = w[i * w_step];
        const float2 y = *reinterpret_cast<const float2*>(m + i * ld + c);
        a0 += x * y.x;
        a1 += x * y.y;
      }
      out(c, a0);
      out(c + 1, a1);
    }
  } else {
    for (int c = lane; c < cols; c += 32) {
      float a = 0;
      for (int i = 0; i < n; ++i) a += w[i * w_step] * m[i * ld + c];
      out(c, a);
    }
  }
}

// kVec: d_k and d_v multiples of 4 (the vector reads of dot_rows and weighted_columns).
template <bool kVec>
__global__ void fused_attention_kernel(AttentionDims d, const float* q, const float* k, const float* v, bool causal,
                                       const int32_t* key_lengths, float scale, float threshold, float keep_scale,
                                       bool drop, RngStream rng, float* probs, float* out) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int T = static_cast<int>(d.queries), S = static_cast<int>(d.keys), dk = static_cast<int>(d.d_k),
            dv = static_cast<int>(d.d_v), H = static_cast<int>(d.heads);
  const int64_t b = blockIdx.x / H, h = blockIdx.x % H, kb = b / d.kv_group;
  const int64_t ldq = H * dk, ldv = H * dv;
  float* ks = smem;                               // [S, dk + kPad]
  float* vs = ks + S * (dk + kPad);               // [S, dv + kPad]
  float* qrow = vs + S * (dv + kPad);             // [warps, dk]
  float* prow = qrow + kFusedWarps * dk;          // [warps, padded(S)]
  load_rows(ks, k + kb * S * ldq + h * dk, S, dk, ldq);
  load_rows(vs, v + kb * S * ldv + h * dv, S, dv, ldv);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* qw = qrow + warp * dk;
  float* pw = prow + warp * padded(S);
  for (int t = warp; t < T; t += kFusedWarps) {
    const float* qt = q + (b * T + t) * ldq + h * dk;
    for (int c = lane; c < dk; c += 32) qw[c] = qt[c];
    __syncwarp();
    const int n = static_cast<int>(visible_keys(S, T, b, t, causal, key_lengths));
    float mx = -INFINITY;
    for (int s = lane; s < n; s += 32) {
      pw[s] = dot_rows<kVec>(qw, ks + s * (dk + kPad), dk) * scale;
      mx = fmaxf(mx, pw[s]);
    }
    mx = warp_max(mx);
    float sum = 0;
    for (int s = lane; s < n; s += 32) {
      pw[s] = expf(pw[s] - mx);
      sum += pw[s];
    }
    sum = warp_sum(sum);
    const float inv = n > 0 ? 1.0f / sum : 0.0f;
    float* p = probs + ((b * H + h) * T + t) * S;
    const uint64_t base = static_cast<uint64_t>(((b * H + h) * T + t) * S);
    for (int s = lane; s < S; s += 32) {
      const float w = s < n ? pw[s] * inv : 0.0f;
      p[s] = w;
      pw[s] = drop ? __fmul_rn(w, keep_factor(rng, base + static_cast<uint64_t>(s), threshold, keep_scale)) : w;
    }
    __syncwarp();
    float* o = out + (b * T + t) * ldv + h * dv;
    weighted_columns<kVec>(pw, 1, vs, dv + kPad, n, dv, [&](int c, float acc) { o[c] = acc; });
    __syncwarp();
  }
}

template <bool kVec>
__global__ void __launch_bounds__(32 * kBackwardWarps)
    fused_attention_backward_kernel(AttentionDims d, const float* q, const float* k, const float* v, float scale,
                                    float threshold, float keep_scale, bool drop, RngStream rng, const float* probs,
                                    const float* dout, float* dq, float* dk, float* dv) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int T = static_cast<int>(d.queries), S = static_cast<int>(d.keys), Dk = static_cast<int>(d.d_k),
            Dv = static_cast<int>(d.d_v), H = static_cast<int>(d.heads);
  const int64_t b = blockIdx.x / H, h = blockIdx.x % H;
  const int64_t ldq = H * Dk, ldv = H * Dv;
  const int ldz = padded(S);
  float* qs = smem;                      // [T, Dk + kPad]
  float* ks = qs + T * (Dk + kPad);      // [S, Dk + kPad]
  float* vs = ks + S * (Dk + kPad);      // [S, Dv + kPad]
  float* dos = vs + S * (Dv + kPad);     // [T, Dv + kPad]
  float* dz = dos + T * (Dv + kPad);     // [T, ldz]
  float* pd = dz + T * ldz;              // [T, ldz]: P̃, the weights after dropout
  load_rows(qs, q + b * T * ldq + h * Dk, T, Dk, ldq);
  load_rows(ks, k + b * S * ldq + h * Dk, S, Dk, ldq);
  load_rows(vs, v + b * S * ldv + h * Dv, S, Dv, ldv);
  load_rows(dos, dout + b * T * ldv + h * Dv, T, Dv, ldv);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* P = probs + (b * H + h) * T * S;
  const uint64_t base = static_cast<uint64_t>((b * H + h) * T * S);
  // Query rows: dP = dropout(dO·Vᵀ), dZ = P ⊙ (dP − Σ dP ⊙ P), dQ += scale · dZ · K.
  for (int t = warp; t < T; t += kBackwardWarps) {
    const float* dot_row = dos + t * (Dv + kPad);
    float* z = dz + t * ldz;
    float dot = 0;
    for (int s = lane; s < S; s += 32) {
      float g = dot_rows<kVec>(dot_row, vs + s * (Dv + kPad), Dv);
      const float p = P[t * S + s];
      if (drop) {
        const float keep = keep_factor(rng, base + static_cast<uint64_t>(t * S + s), threshold, keep_scale);
        g = __fmul_rn(g, keep);
        pd[t * ldz + s] = __fmul_rn(p, keep);
      } else {
        pd[t * ldz + s] = p;
      }
      z[s] = g;
      dot += g * p;
    }
    dot = warp_sum(dot);
    for (int s = lane; s < S; s += 32) z[s] = P[t * S + s] * (z[s] - dot);
    __syncwarp();
    float* dqt = dq + (b * T + t) * ldq + h * Dk;
    weighted_columns<kVec>(z, 1, ks, Dk + kPad, S, Dk, [&](int c, float acc) { dqt[c] += scale * acc; });
  }
  __syncthreads();
  // Key rows: dV += P̃ᵀ · dO, dK += scale · dZᵀ · Q.
  for (int s = warp; s < S; s += kBackwardWarps) {
    float* dvs = dv + (b * S + s) * ldv + h * Dv;
    weighted_columns<kVec>(pd + s, ldz, dos, Dv + kPad, T, Dv, [&](int c, float acc) { dvs[c] += acc; });
    float* dks = dk + (b * S + s) * ldq + h * Dk;
    weighted_columns<kVec>(dz + s, ldz, qs, Dk + kPad, T, Dk, [&](int c, float acc) { dks[c] += scale * acc; });
  }
}

// Shared memory the fused kernels need, in bytes; beyond fused_limit() the products path runs.
constexpr size_t kFusedLimit = 160 * 1024;
// kFusedLimit, or less on a GPU that lets a block have less (sm_75: 64 KB, sm_86: 99 KB).
size_t fused_limit() {
  static const size_t limit = [] {
    int device = 0, optin = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "cudaDeviceGetAttribute");
    return std::min(kFusedLimit, static_cast<size_t>(optin));
  }();
  return limit;
}
size_t fused_forward_bytes(const AttentionDims& d) {
  return sizeof(float) * static_cast<size_t>(d.keys * (d.d_k + kPad) + d.keys * (d.d_v + kPad) +
                                             kFusedWarps * d.d_k + kFusedWarps * padded(static_cast<int>(d.keys)));
}
size_t fused_backward_bytes(const AttentionDims& d) {
  return sizeof(float) * static_cast<size_t>(d.queries * (d.d_k + kPad) + d.keys * (d.d_k + kPad) +
                                             d.keys * (d.d_v + kPad) + d.queries * (d.d_v + kPad) +
                                             2 * d.queries * padded(static_cast<int>(d.keys)));
}
// The fused kernels' vector reads need d_k and d_v in multiples of 4 (and so every shared row
// 16-byte aligned); other widths run the same kernels with plain reads.
bool vector_widths(const AttentionDims& d) { return d.d_k % 4 == 0 && d.d_v % 4 == 0; }

// Raises a kernel's dynamic shared memory limit to fused_limit() (above the default 48 KB).
template <class K>
void allow_shared(K kernel) {
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(fused_limit())),
        "cudaFuncSetAttribute");
}

}  // namespace

void gemm_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta, float* c,
                  int64_t ldc, int64_t stride_c, int64_t batch, bool bf16) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  TFM_CHECK(m <= kMaxInt && n <= kMaxInt && k <= kMaxInt && lda <= kMaxInt && ldb <= kMaxInt && ldc <= kMaxInt &&
                batch <= kMaxInt,
            "matmul on cuda: sizes beyond cuBLAS's 32-bit ones (m ", m, ", n ", n, ", k ", k, ", batch ", batch, ")");
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  if (!bf16) {
    check_blas(cublasSgemmStridedBatched(handle(), op_b, op_a, in, im, ik, &alpha, b, static_cast<int>(ldb), stride_b, a,
                                         static_cast<int>(lda), stride_a, &beta, c, static_cast<int>(ldc), stride_c,
                                         static_cast<int>(batch)),
               "cublasSgemmStridedBatched");
    return;
  }
  // A and B rounded into bfloat16 copies of the same layout.
  const int64_t na = span(batch, stride_a, trans_a ? k : m, trans_a ? m : k, lda);
  const int64_t nb = span(batch, stride_b, trans_b ? n : k, trans_b ? k : n, ldb);
  auto memory = scratch(sizeof(__nv_bfloat16) * static_cast<size_t>(na + nb + 8));
  auto* a16 = static_cast<__nv_bfloat16*>(memory.get());
  __nv_bfloat16* b16 = a16 + (na + 7) / 8 * 8;  // 16-byte aligned
  to_bf16(na, a, a16);
  to_bf16(nb, b, b16);
  launched("gemm (bf16 inputs)");
  check_blas(cublasGemmStridedBatchedEx(handle(), op_b, op_a, in, im, ik, &alpha, b16, CUDA_R_16BF, static_cast<int>(ldb),
                                        stride_b, a16, CUDA_R_16BF, static_cast<int>(lda), stride_a, &beta, c,
                                        CUDA_R_32F, static_cast<int>(ldc), stride_c, static_cast<int>(batch),
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "cublasGemmStridedBatchedEx (bf16)");
}

bool linear_forward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w, const float* bias,
                    bool relu, float* y, bool bf16, const float* residual) {
  // Column-major: yᵀ[out, rows] = wᵀᵀ · xᵀ (+ residualᵀ as C), w stored [out, in] (column-major
  // [in, out]), the bias one value per row of yᵀ.
  return lt_matmul(true, false, out, rows, in, w, in, x, in, 0.0f, y, out, bf16,
                   relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS, bias, nullptr, residual);
}

int64_t residual_products() { return residual_count.load(std::memory_order_relaxed); }

std::shared_ptr<const void> pack_bf16(int64_t n, const float* w) {
  std::shared_ptr<void> memory = scratch(sizeof(__nv_bfloat16) * static_cast<size_t>(std::max<int64_t>(n, 1)));
  if (n > 0) to_bf16(n, w, static_cast<__nv_bfloat16*>(memory.get()));
  launched("pack_bf16");
  return memory;
}

bool linear_forward_packed(int64_t rows, int64_t in, int64_t out, const float* x, const void* w16, const float* bias,
                           bool relu, float* y, const float* residual) {
  const cublasLtEpilogue_t epilogue = bias != nullptr ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                                      : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  return lt_matmul(true, false, out, rows, in, nullptr, in, x, in, 0.0f, y, out, true, epilogue, bias,
                   static_cast<const __nv_bfloat16*>(w16), residual);
}

void gemm_packed_bf16(int64_t rows, int64_t in, int64_t out, const float* x, const void* w16, float* y) {
  if (rows <= 0 || out <= 0) return;
  if (in <= 0) {  // an empty sum
    check(cudaMemsetAsync(y, 0, sizeof(float) * static_cast<size_t>(rows * out)), "gemm_packed_bf16");
    return;
  }
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  TFM_CHECK(rows <= kMaxInt && in <= kMaxInt && out <= kMaxInt, "matmul_packed on cuda: sizes beyond cuBLAS's ",
            "32-bit ones (rows ", rows, ", in ", in, ", out ", out, ")");
  auto memory = scratch(sizeof(__nv_bfloat16) * static_cast<size_t>(rows * in));
  auto* x16 = static_cast<__nv_bfloat16*>(memory.get());
  to_bf16(rows * in, x, x16);
  launched("gemm_packed_bf16 (x rounded)");
  const float one = 1.0f, zero = 0.0f;
  const int r = static_cast<int>(rows), i = static_cast<int>(in), o = static_cast<int>(out);
  // Column-major yᵀ[out, rows] = w16ᵀᵀ · x16ᵀ, w16 stored [out, in] (column-major [in, out]).
  check_blas(cublasGemmStridedBatchedEx(handle(), CUBLAS_OP_T, CUBLAS_OP_N, o, r, i, &one, w16, CUDA_R_16BF, i, 0, x16,
                                        CUDA_R_16BF, i, 0, &zero, y, CUDA_R_32F, o, 0, 1, CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT),
             "cublasGemmStridedBatchedEx (packed bf16)");
}

bool linear_weight_grad(int64_t rows, int64_t in, int64_t out, const float* x, const float* dy, float* dw,
                        float* bgrad) {
  // Column-major: dwᵀ[in, out] += xᵀ[in, rows] · (dyᵀ[out, rows])ᵀ; the bias gradient is B's sum
  // over the product's k (rows): one value per column of dwᵀ.
  return lt_matmul(false, true, in, out, rows, x, in, dy, out, 1.0f, dw, in, false, CUBLASLT_EPILOGUE_BGRADB, bgrad);
}

void linear_backward_bf16(int64_t rows, int64_t in, int64_t out, const float* x, const float* w,
                          const __nv_bfloat16* dy16, float* dx, float* dw) {
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  TFM_CHECK(rows <= kMaxInt && in <= kMaxInt && out <= kMaxInt, "linear_backward on cuda: sizes beyond cuBLAS's ",
            "32-bit ones (rows ", rows, ", in ", in, ", out ", out, ")");
  const int64_t nw = out * in, nx = rows * in;
  auto round = [](int64_t n) { return (n + 127) / 128 * 128; };  // 256-byte aligned copies
  auto memory = scratch(sizeof(__nv_bfloat16) * static_cast<size_t>(round(nw) + round(nx)));
  auto* w16 = static_cast<__nv_bfloat16*>(memory.get());
  __nv_bfloat16* x16 = w16 + round(nw);
  if (dx != nullptr) to_bf16(nw, w, w16);
  to_bf16(nx, x, x16);
  launched("linear_backward (bf16 inputs)");
  const float one = 1.0f;
  const int r = static_cast<int>(rows), i = static_cast<int>(in), o = static_cast<int>(out);
  // Row-major products as column-major ones of the transposes, as gemm_strided maps them.
  if (dx != nullptr)  // dx += dy · w
    check_blas(cublasGemmStridedBatchedEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, i, r, o, &one, w16, CUDA_R_16BF, i, 0,
                                          dy16, CUDA_R_16BF, o, 0, &one, dx, CUDA_R_32F, i, 0, 1, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx (linear dx, bf16)");
  // dw += dyᵀ · x
  check_blas(cublasGemmStridedBatchedEx(handle(), CUBLAS_OP_N, CUBLAS_OP_T, i, o, r, &one, x16, CUDA_R_16BF, i, 0,
                                        dy16, CUDA_R_16BF, o, 0, &one, dw, CUDA_R_32F, i, 0, 1, CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT),
             "cublasGemmStridedBatchedEx (linear dw, bf16)");
}

void round_to_bf16(int64_t n, const float* x, float* y) {
  if (n <= 0) return;
  round_bf16_kernel<<<grid_for(n), kThreads>>>(n, x, y);
  launched("round_to_bf16");
}

void attention(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
               const int32_t* key_lengths, const int32_t* key_rows, double dropout_rate, const RngStream& rng,
               float* probs, float* out) {
  const int64_t B = d.batch, T = d.queries, S = d.keys, H = d.heads;
  if (B * H * T == 0) return;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  const int64_t ldq = H * d.d_k, ldv = H * d.d_v;
  if (key_rows != nullptr) {
    decode_attention_kernel<<<static_cast<unsigned>(B * H), 128>>>(d, q, k, v, causal, key_lengths, key_rows, scale,
                                                                  probs, out);
    launched("attention (decoding cache)");
    return;
  }
  if (S == 0) {
    check(cudaMemsetAsync(out, 0, sizeof(float) * B * T * ldv), "attention: zero output");
    return;
  }
  const auto threshold = static_cast<float>(dropout_rate), keep_scale = static_cast<float>(1.0 / (1.0 - dropout_rate));
  if (const size_t bytes = fused_forward_bytes(d); bytes <= fused_limit()) {
    static const bool allowed =
        (allow_shared(fused_attention_kernel<true>), allow_shared(fused_attention_kernel<false>), true);
    (void)allowed;
    (vector_widths(d) ? fused_attention_kernel<true> : fused_attention_kernel<false>)
        <<<static_cast<unsigned>(B * H), 32 * kFusedWarps, bytes>>>(d, q, k, v, causal, key_lengths, scale, threshold,
                                                                   keep_scale, dropout_rate > 0, rng, probs, out);
    launched("attention (fused)");
    return;
  }
  // Scores: P[b, h] = scale · Q[b, h] · K[b / g, h]ᵀ.
  const int64_t g = d.kv_group;
  if (g == 1) {
    for (int64_t h = 0; h < H; ++h)
      gemm_strided(false, true, T, S, d.d_k, scale, q + h * d.d_k, ldq, T * ldq, k + h * d.d_k, ldq, S * ldq, 0.0f,
                   probs + h * T * S, S, H * T * S, B, false);
  } else {
    for (int64_t b = 0; b < B; ++b)
      gemm_strided(false, true, T, S, d.d_k, scale, q + b * T * ldq, ldq, d.d_k, k + (b / g) * S * ldq, ldq, d.d_k,
                   0.0f, probs + b * H * T * S, S, T * S, H, false);
  }
  masked_softmax_kernel<<<static_cast<unsigned>(B * H * T), 128>>>(H, T, S, causal, key_lengths, probs);
  launched("attention (softmax)");
  const float* weights = probs;
  std::shared_ptr<void> dropped;
  if (dropout_rate > 0) {
    dropped = scratch(sizeof(float) * B * H * T * S);
    cuda::dropout(B * H * T * S, probs, dropout_rate, rng, static_cast<float*>(dropped.get()));
    weights = static_cast<const float*>(dropped.get());
  }
  // O[b, h] = P̃[b, h] · V[b / g, h].
  if (g == 1) {
    for (int64_t h = 0; h < H; ++h)
      gemm_strided(false, false, T, d.d_v, S, 1.0f, weights + h * T * S, S, H * T * S, v + h * d.d_v, ldv, S * ldv,
                   0.0f, out + h * d.d_v, ldv, T * ldv, B, false);
  } else {
    for (int64_t b = 0; b < B; ++b)
      gemm_strided(false, false, T, d.d_v, S, 1.0f, weights + b * H * T * S, S, T * S, v + (b / g) * S * ldv, ldv,
                   d.d_v, 0.0f, out + b * T * ldv, ldv, d.d_v, H, false);
  }
}

void attention_backward(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                        const int32_t* key_lengths, double dropout_rate, const RngStream& rng, const float* probs,
                        const float* dout, float* dq, float* dk, float* dv) {
  (void)causal;
  (void)key_lengths;  // masked weights are exactly zero in probs: their gradients vanish by themselves
  const int64_t B = d.batch, T = d.queries, S = d.keys, H = d.heads;
  if (B * H * T * S == 0) return;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
  const int64_t ldq = H * d.d_k, ldv = H * d.d_v, tile = T * S, n = B * H * tile;
  if (const size_t bytes = fused_backward_bytes(d); bytes <= fused_limit()) {
    static const bool allowed = (allow_shared(fused_attention_backward_kernel<true>),
                                 allow_shared(fused_attention_backward_kernel<false>), true);
    (void)allowed;
    (vector_widths(d) ? fused_attention_backward_kernel<true> : fused_attention_backward_kernel<false>)
        <<<static_cast<unsigned>(B * H), 32 * kBackwardWarps, bytes>>>(
            d, q, k, v, scale, static_cast<float>(dropout_rate), static_cast<float>(1.0 / (1.0 - dropout_rate)),
            dropout_rate > 0, rng, probs, dout, dq, dk, dv);
    launched("attention_backward (fused)");
    return;
  }
  const float* weights = probs;
  std::shared_ptr<void> dropped;
  if (dropout_rate > 0) {
    dropped = scratch(sizeof(float) * n);
    cuda::dropout(n, probs, dropout_rate, rng, static_cast<float*>(dropped.get()));
    weights = static_cast<const float*>(dropped.get());
  }
  auto dp_memory = scratch(sizeof(float) * n);
  auto* dp = static_cast<float*>(dp_memory.get());
  for (int64_t h = 0; h < H; ++h) {
    // dV += P̃ᵀ · dO ;  dP̃ = dO · Vᵀ
    gemm_strided(true, false, S, d.d_v, T, 1.0f, weights + h * tile, S, H * tile, dout + h * d.d_v, ldv, T * ldv, 1.0f,
                 dv + h * d.d_v, ldv, S * ldv, B, false);
    gemm_strided(false, true, T, S, d.d_v, 1.0f, dout + h * d.d_v, ldv, T * ldv, v + h * d.d_v, ldv, S * ldv, 0.0f,
                 dp + h * tile, S, H * tile, B, false);
  }
  if (dropout_rate > 0) cuda::dropout(n, dp, dropout_rate, rng, dp);
  softmax_rows_backward_kernel<<<static_cast<unsigned>(B * H * T), 128>>>(S, probs, dp);
  launched("attention_backward (softmax)");
  for (int64_t h = 0; h < H; ++h) {
    // dQ += dZ · K / √d_k ;  dK += dZᵀ · Q / √d_k
    gemm_strided(false, false, T, d.d_k, S, scale, dp + h * tile, S, H * tile, k + h * d.d_k, ldq, S * ldq, 1.0f,
                 dq + h * d.d_k, ldq, T * ldq, B, false);
    gemm_strided(true, false, S, d.d_k, T, scale, dp + h * tile, S, H * tile, q + h * d.d_k, ldq, T * ldq, 1.0f,
                 dk + h * d.d_k, ldq, S * ldq, B, false);
  }
}

}  // namespace tfm::cuda
