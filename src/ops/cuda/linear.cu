// Linear layers (ops/matmul.h's linear and linear_backward) and inference's packed bf16 weights
// (ops/packed.h on a GPU): cuBLASLt products with the bias, ReLU and bias gradient in their epilogue,
// cuBLAS products and the elementwise ops where cuBLASLt has no algorithm for them.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>

#include "ops/cuda/blas.cuh"
#include "ops/cuda/column_sums.cuh"
#include "ops/cuda/common.cuh"
#include "ops/cuda/ops.h"

namespace tfm::cuda {

using ops::Activation;

namespace {

// A linear layer's products through cuBLASLt, the rest in the product's epilogue:
//   linear_forward:     y[rows, out] = act(x[rows, in] · w[out, in]ᵀ + bias[out]), act none or ReLU;
//                       with a residual[rows, out] (not y; relu false): y = x · wᵀ + residual + bias
//   linear_weight_grad: dw[out, in] += dy[rows, out]ᵀ · x[rows, in], bgrad[out] = Σ_rows dy (written);
//                       float32 only (in bf16 the epilogue would sum dy rounded to bfloat16)
// linear_forward's bf16: x and w rounded to bfloat16 first, unless they are bfloat16 already. False,
// with nothing done but rounding, where cuBLASLt has no algorithm for it.
bool linear_forward(int64_t rows, int64_t in, int64_t out, ops::Bf16Input x, ops::Bf16Input w, const float* bias,
                    bool relu, float* y, bool bf16, const float* residual) {
  // Column-major: yᵀ[out, rows] = wᵀᵀ · xᵀ (+ residualᵀ as C), w stored [out, in] (column-major
  // [in, out]), the bias one value per row of yᵀ.
  auto as_float = [](ops::Bf16Input t) { return t.bf16 ? nullptr : static_cast<const float*>(t.data); };
  auto as_bf16 = [](ops::Bf16Input t) { return t.bf16 ? static_cast<const __nv_bfloat16*>(t.data) : nullptr; };
  return lt_matmul(true, false, out, rows, in, as_float(w), in, as_float(x), in, 0.0f, y, out, bf16,
                   relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS, bias, as_bf16(w), residual, as_bf16(x));
}

bool linear_weight_grad(int64_t rows, int64_t in, int64_t out, const float* x, const float* dy, float* dw,
                        float* bgrad) {
  // Column-major: dwᵀ[in, out] += xᵀ[in, rows] · (dyᵀ[out, rows])ᵀ; the bias gradient is B's sum
  // over the product's k (rows): one value per column of dwᵀ.
  return lt_matmul(false, true, in, out, rows, x, in, dy, out, 1.0f, dw, in, false, CUBLASLT_EPILOGUE_BGRADB, bgrad);
}

// Inference's packed weights: linear_forward_packed: y[rows, out] = act(bf16(x) · w16[out, in]ᵀ + bias)
// with the bias (may be null) and act (none or ReLU) in cuBLASLt's epilogue, false where cuBLASLt has
// no algorithm for it, the residual (may be null) as linear_forward's; gemm_packed_bf16: y = bf16(x) ·
// w16ᵀ through cuBLAS.
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

// dx[rows, in] += dy[rows, out] · w[out, in] (dx may be null) and dw[out, in] += dy[rows, out]ᵀ · x[rows, in]
// with dy already rounded to bfloat16 (dy16), w and x rounded once for both products (unless they are
// bfloat16 already), float32 sums.
void linear_backward_bf16(int64_t rows, int64_t in, int64_t out, ops::Bf16Input x, ops::Bf16Input w,
                          const __nv_bfloat16* dy16, float* dx, float* dw) {
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  TFM_CHECK(rows <= kMaxInt && in <= kMaxInt && out <= kMaxInt, "linear_backward on cuda: sizes beyond cuBLAS's ",
            "32-bit ones (rows ", rows, ", in ", in, ", out ", out, ")");
  // Copies only of the float32 inputs that are read (none in bf16 training, whose are bfloat16).
  const int64_t nw = dx != nullptr && !w.bf16 ? out * in : 0, nx = x.bf16 ? 0 : rows * in;
  auto round = [](int64_t n) { return (n + 127) / 128 * 128; };  // 256-byte aligned copies
  auto memory = scratch(sizeof(__nv_bfloat16) * static_cast<size_t>(std::max<int64_t>(round(nw) + round(nx), 1)));
  auto* w16 = static_cast<__nv_bfloat16*>(memory.get());
  __nv_bfloat16* x16 = w16 + round(nw);
  if (nw > 0) to_bf16(nw, static_cast<const float*>(w.data), w16);
  if (nx > 0) to_bf16(nx, static_cast<const float*>(x.data), x16);
  if (nw + nx > 0) launched("linear_backward (bf16 inputs rounded)");
  const __nv_bfloat16* w_in = w.bf16 ? static_cast<const __nv_bfloat16*>(w.data) : w16;
  const __nv_bfloat16* x_in = x.bf16 ? static_cast<const __nv_bfloat16*>(x.data) : x16;
  const float one = 1.0f;
  const int r = static_cast<int>(rows), i = static_cast<int>(in), o = static_cast<int>(out);
  // Row-major products as column-major ones of the transposes, as gemm_strided maps them.
  if (dx != nullptr)  // dx += dy · w
    check_blas(cublasGemmStridedBatchedEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, i, r, o, &one, w_in, CUDA_R_16BF, i, 0,
                                          dy16, CUDA_R_16BF, o, 0, &one, dx, CUDA_R_32F, i, 0, 1, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx (linear dx, bf16)");
  // dw += dyᵀ · x
  check_blas(cublasGemmStridedBatchedEx(handle(), CUBLAS_OP_N, CUBLAS_OP_T, i, o, r, &one, x_in, CUDA_R_16BF, i, 0,
                                        dy16, CUDA_R_16BF, o, 0, &one, dw, CUDA_R_32F, i, 0, 1, CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT),
             "cublasGemmStridedBatchedEx (linear dw, bf16)");
}

}  // namespace

bool linear(int64_t rows, int64_t in, int64_t out, ops::Bf16Input x, ops::Bf16Input w, const float* bias,
            Activation act, float* y, bool bf16, const float* residual) {
  TFM_CHECK(bf16 || (!x.bf16 && !w.bf16), "linear on cuda: bfloat16 inputs to a float32 product");
  if (act != Activation::kNone && act != Activation::kRelu) return false;
  if (residual != nullptr && act != Activation::kNone) return false;
  return cuda::linear_forward(rows, in, out, x, w, bias, act == Activation::kRelu, y, bf16, residual);
}

std::shared_ptr<const void> pack_bf16(int64_t n, const float* w) {
  std::shared_ptr<void> memory = scratch(sizeof(__nv_bfloat16) * static_cast<size_t>(std::max<int64_t>(n, 1)));
  if (n > 0) to_bf16(n, w, static_cast<__nv_bfloat16*>(memory.get()));
  launched("pack_bf16");
  return memory;
}

void linear_packed_bf16(int64_t rows, int64_t in, int64_t out, const float* x, const void* w16, const float* bias,
                        Activation act, float* y, const float* residual) {
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

void linear_backward(int64_t rows, int64_t in, int64_t out, ops::Bf16Input x, ops::Bf16Input w, const float* dy,
                     float* dx, float* dw, float* dbias, bool bf16) {
  TFM_CHECK(bf16 || (!x.bf16 && !w.bf16), "linear_backward on cuda: bfloat16 inputs to a float32 product");
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
  // Float32 (bfloat16 inputs come only with bf16, ops/matmul.cc).
  if (dx != nullptr) gemm(1, false, false, rows, in, out, 1.0f, {dy, false}, 0, w, 0, 1.0f, dx, 0, false);
  // cuBLASLt writes the bias gradient; it is added here.
  auto memory = scratch(sizeof(float) * static_cast<size_t>(out));
  auto* bgrad = static_cast<float*>(memory.get());
  if (cuda::linear_weight_grad(rows, in, out, static_cast<const float*>(x.data), dy, dw, bgrad)) {
    add_to(out, bgrad, dbias);
    return;
  }
  gemm(1, true, false, out, in, rows, 1.0f, {dy, false}, 0, x, 0, 1.0f, dw, 0, false);
  bias_add_backward(rows, out, dy, dbias);
}

}  // namespace tfm::cuda
