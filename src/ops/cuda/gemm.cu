// Products through cuBLAS and cuBLASLt (the handles, cuBLASLt's plans), and the rounding of their
// inputs to bfloat16.
//
// cuBLAS is column-major: a row-major matrix is its transpose there. So the row-major product
// C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ, B first, with every leading dimension as stored.
// Float32 products use cuBLAS's default math (no TF32): sums in float32 of float32 products. Bf16
// products round A and B to bfloat16 (round to nearest even) and sum in float32.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include "ops/cuda/blas.cuh"
#include "ops/cuda/common.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {
namespace {

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

}  // namespace

cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    check_blas(cublasCreate(&created), "cublasCreate");
    check_blas(cublasSetMathMode(created, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    return created;
  }();
  return h;
}

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

bool lt_matmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc, bool bf16, cublasLtEpilogue_t epilogue,
               const float* vector, const __nv_bfloat16* a16_given, const float* c_in,
               const __nv_bfloat16* b16_given) {
  if (m <= 0 || n <= 0 || k <= 0) return false;
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  if (m > kMaxInt || n > kMaxInt || k > kMaxInt) return false;
  const void* a_in = a;
  const void* b_in = b;
  std::shared_ptr<void> memory;
  if (bf16) {  // A and B rounded into bfloat16 copies (contiguous: lda, ldb their column lengths)
    const int64_t na = a16_given != nullptr ? 0 : lda * (trans_a ? m : k);
    const int64_t nb = b16_given != nullptr ? 0 : ldb * (trans_b ? k : n);
    memory = scratch(sizeof(__nv_bfloat16) * static_cast<size_t>(na + nb + 128));
    auto* a16 = static_cast<__nv_bfloat16*>(memory.get());
    __nv_bfloat16* b16 = a16 + (na + 127) / 128 * 128;  // 256-byte aligned
    if (a16_given == nullptr) to_bf16(na, a, a16);
    if (b16_given == nullptr) to_bf16(nb, b, b16);
    if (na + nb > 0) launched("cuBLASLt product (bf16 inputs)");
    a_in = a16_given != nullptr ? static_cast<const void*>(a16_given) : a16;
    b_in = b16_given != nullptr ? static_cast<const void*>(b16_given) : b16;
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

namespace {
// cuBLAS takes its sizes as int: a product beyond them is refused, naming them.
void check_int_sizes(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, int64_t batch) {
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  TFM_CHECK(m <= kMaxInt && n <= kMaxInt && k <= kMaxInt && lda <= kMaxInt && ldb <= kMaxInt && ldc <= kMaxInt &&
                batch <= kMaxInt,
            "matmul on cuda: sizes beyond cuBLAS's 32-bit ones (m ", m, ", n ", n, ", k ", k, ", batch ", batch, ")");
}
}  // namespace

void gemm_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta, float* c,
                  int64_t ldc, int64_t stride_c, int64_t batch, bool bf16) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  check_int_sizes(m, n, k, lda, ldb, ldc, batch);
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  if (!bf16) {
    check_blas(cublasSgemmStridedBatched(handle(), op_b, op_a, in, im, ik, &alpha, b, static_cast<int>(ldb), stride_b, a,
                                         static_cast<int>(lda), stride_a, &beta, c, static_cast<int>(ldc), stride_c,
                                         static_cast<int>(batch)),
               "cublasSgemmStridedBatched");
    return;
  }
  gemm_strided_bf16(trans_a, trans_b, m, n, k, alpha, {a, false}, lda, stride_a, {b, false}, ldb, stride_b, beta, c,
                    ldc, stride_c, batch);
}

void gemm_strided_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, ops::Bf16Input a,
                       int64_t lda, int64_t stride_a, ops::Bf16Input b, int64_t ldb, int64_t stride_b, float beta,
                       float* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  check_int_sizes(m, n, k, lda, ldb, ldc, batch);
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  // Float32 inputs rounded into bfloat16 copies of the same layout; bfloat16 ones read as they are.
  const int64_t na = a.bf16 ? 0 : span(batch, stride_a, trans_a ? k : m, trans_a ? m : k, lda);
  const int64_t nb = b.bf16 ? 0 : span(batch, stride_b, trans_b ? n : k, trans_b ? k : n, ldb);
  auto memory = scratch(sizeof(__nv_bfloat16) * static_cast<size_t>(na + nb + 8));
  auto* a_rounded = static_cast<__nv_bfloat16*>(memory.get());
  __nv_bfloat16* b_rounded = a_rounded + (na + 7) / 8 * 8;  // 16-byte aligned
  if (!a.bf16) to_bf16(na, static_cast<const float*>(a.data), a_rounded);
  if (!b.bf16) to_bf16(nb, static_cast<const float*>(b.data), b_rounded);
  if (na + nb > 0) launched("gemm (bf16 inputs rounded)");
  const void* a16 = a.bf16 ? a.data : a_rounded;
  const void* b16 = b.bf16 ? b.data : b_rounded;
  check_blas(cublasGemmStridedBatchedEx(handle(), op_b, op_a, in, im, ik, &alpha, b16, CUDA_R_16BF, static_cast<int>(ldb),
                                        stride_b, a16, CUDA_R_16BF, static_cast<int>(lda), stride_a, &beta, c,
                                        CUDA_R_32F, static_cast<int>(ldc), stride_c, static_cast<int>(batch),
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "cublasGemmStridedBatchedEx (bf16)");
}

void gemm(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, ops::Bf16Input a,
          int64_t stride_a, ops::Bf16Input b, int64_t stride_b, float beta, float* c, int64_t stride_c, bool bf16) {
  TFM_CHECK(bf16 || (!a.bf16 && !b.bf16), "matmul on cuda: bfloat16 inputs to a float32 product");
  if (k == 0) {  // an empty sum: C = beta · C (cuBLAS refuses the zero leading dimensions)
    const int64_t count = batch * m * n;  // the ops' C is contiguous
    if (beta == 0.0f) check(cudaMemsetAsync(c, 0, sizeof(float) * static_cast<size_t>(count)), "gemm");
    else scale(count, c, beta, c);
    return;
  }
  if (bf16)
    gemm_strided_bf16(trans_a, trans_b, m, n, k, alpha, a, trans_a ? m : k, stride_a, b, trans_b ? k : n, stride_b,
                      beta, c, n, stride_c, batch);
  else
    gemm_strided(trans_a, trans_b, m, n, k, alpha, static_cast<const float*>(a.data), trans_a ? m : k, stride_a,
                 static_cast<const float*>(b.data), trans_b ? k : n, stride_b, beta, c, n, stride_c, batch, false);
}

void round_to_bf16(int64_t n, const float* x, float* y) {
  if (n <= 0) return;
  round_bf16_kernel<<<grid_for(n), kThreads>>>(n, x, y);
  launched("round_to_bf16");
}

void to_bf16(int64_t n, const float* x, void* y16) {
  if (n <= 0) return;
  to_bf16(n, x, static_cast<__nv_bfloat16*>(y16));
  launched("to_bf16");
}

int64_t residual_products() { return residual_count.load(std::memory_order_relaxed); }

}  // namespace tfm::cuda
