#pragma once
// What gemm.cu and linear.cu share to call cuBLAS and cuBLASLt (defined in gemm.cu): the status
// check, the handle, the rounding of a product's inputs to bfloat16, and cuBLASLt's product.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "core/error.h"
#include "ops/bf16_input.h"
#include "ops/cuda/common.cuh"

namespace tfm::cuda {

inline void check_blas(cublasStatus_t rc, const char* what) {
  if (rc == CUBLAS_STATUS_SUCCESS) return;
  throw Error(cat("cuBLAS: ", what, " failed: ", cublasGetStatusString(rc), " (", static_cast<int>(rc), ")"));
}

// One handle for the process, made on first use (never destroyed: tensors may outlive statics).

cublasHandle_t handle();

// y[i] = bf16(x[i]), i < n: the rounding of a product's inputs.

void to_bf16(int64_t n, const float* x, __nv_bfloat16* y);

// Column-major D[m, n] = op(A) · op(B) + beta · C through cuBLASLt, C being D unless c_in is given, the
// epilogue's vector (bias or bias gradient) at `vector`; false, with nothing done but rounding, where
// cuBLASLt has no algorithm for it (the caller then runs a plain product). bf16: A and B rounded to
// bfloat16 first.
// a16_given, b16_given: with bf16, A or B already in bfloat16 (inference's packed weights, training's
// bfloat16 activations and weight copy), used instead of a or b.
// c_in: the product's C when it is not D (c), then with beta 1 (a residual connection's input).

bool lt_matmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc, bool bf16, cublasLtEpilogue_t epilogue,
               const float* vector, const __nv_bfloat16* a16_given = nullptr, const float* c_in = nullptr,
               const __nv_bfloat16* b16_given = nullptr);

// The bf16 form of gemm_strided (ops.h): each input float32 (rounded into a bfloat16 copy) or
// bfloat16 (read as it is).
void gemm_strided_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, ops::Bf16Input a,
                       int64_t lda, int64_t stride_a, ops::Bf16Input b, int64_t ldb, int64_t stride_b, float beta,
                       float* c, int64_t ldc, int64_t stride_c, int64_t batch);

}  // namespace tfm::cuda
