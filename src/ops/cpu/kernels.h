#pragma once
// CPU kernels behind the device-neutral ops in ops/*.h. Arguments are validated by the ops; these
// take raw pointers and sizes. T is float or double. OpenMP threads share one pool with BLAS.
// Every reduction runs in a fixed order within one thread, so results do not depend on the thread
// count except inside BLAS. The project's own loops live in ops/cpu/simd, compiled once per SIMD
// build and chosen at run time by the CPU's level (ops/cpu/isa.h); the products call BLAS and oneDNN,
// which choose their own kernels (oneDNN within the level's limit).
#include <cstdint>
#include <functional>
#include <memory>

#include "core/rng.h"
#include "ops/activation.h"
#include "ops/bf16_input.h"
#include "ops/rotary_rate.h"

namespace tfm::cpu {

struct AttentionDims {
  int64_t batch, queries, keys, heads, d_k, d_v;  // B, T, S, H, d_k, d_v
  int64_t kv_group = 1;  // query batch entries per key/value entry (beams sharing an encoder output)
  int64_t kv_rows = 0;   // with key_rows: R, the rows of each position's slab (k, v: [S, R, KV·d])
  int64_t kv_heads = 0;  // KV, the key/value heads (set by the ops: 1 ≤ KV ≤ H, H a multiple of KV)
  int64_t window = 0;    // sliding window (ops::AttentionArgs::window); 0 = none
};

// The per-build kernels, dispatched at run time (ops/cpu/dispatch.cc).
#include "ops/cpu/simd/kernels.inc"

template <class T>
void gemm(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t stride_a, const T* b, int64_t stride_b, T beta, T* c, int64_t stride_c);

// One product with explicit leading dimensions (row-major), for strided views such as one head.
template <class T>
void gemm_ld(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
             const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// gemm with A and B rounded to bfloat16 (to nearest, ties to even) and float32 sums. From the avx512
// level up, oneDNN's bf16 matmul: native with AVX-512 BF16 or AMX, emulated by oneDNN on plain AVX-512.
// Below it (oneDNN has no bf16 products there), the inputs rounded into float32 buffers and a float32
// product: a product of two bfloat16 values is exact in float32, so the definition is the same.
// Each input float32 values (rounded on each call) or bfloat16 ones (ops/bf16_input.h).
using ops::Bf16Input;
void gemm_bf16(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               Bf16Input a, int64_t stride_a, Bf16Input b, int64_t stride_b, float beta, float* c,
               int64_t stride_c);
// Whether bfloat16 products run on bfloat16 instructions (AVX-512 BF16 or AMX at the current
// level); otherwise they are slower than float32 ones.
bool bf16_native();
const char* bf16_path();  // how they run here, in a sentence

// Byte copies (any dtype): the first copy_bytes of dst row i = those of src row indices[i] (rows
// row_bytes apart).
void copy_rows(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, const char* src, char* dst);
// dst row r (width_bytes, rows contiguous) = width_bytes of src row r from offset_bytes (rows
// row_bytes apart), for `rows` rows.
void copy_columns(int64_t rows, int64_t row_bytes, int64_t offset_bytes, int64_t width_bytes, const char* src,
                  char* dst);

// int8: y [m, n] = act(x [m, k] · (w [n, k] · w_scale)ᵀ (+ bias)), the bias and the activation in
// the dequantization pass, with each row of x quantized to int8_activation_levels() levels each side
// of zero: oneDNN's u8 × s8 products add pairs of them in 16 bits on CPUs without VNNI, where
// 8-bit activations could overflow (saturate) and 7-bit ones cannot; with VNNI the sums are 32-bit.
int int8_activation_levels();  // 127 (8 bits) where oneDNN's products run on VNNI, else 63 (7 bits)
// panels: w packed once by pack_int8 (or null): the same integer sums through the project's own
// kernel (simd/int8_panels.cc), which pack_int8 uses where it beats oneDNN's gemm (int8_panels_serve;
// null elsewhere).
// after_block (or null): called with each block of columns [c0, c0 + nc) once every row of y there
// is final, by the thread that made it, while the block is in its cache (ops/screen.cc reads each
// row's maximum there); blocks are whole 16-column units, any order, in parallel.
void matmul_int8(int64_t m, int64_t n, int64_t k, const float* x, const int8_t* w, const float* w_scale,
                 const float* bias, ops::Activation act, float* y, const void* panels = nullptr,
                 const std::function<void(int64_t c0, int64_t nc)>* after_block = nullptr);
bool int8_panels_serve(int64_t n, int64_t k);
std::shared_ptr<const void> pack_int8(int64_t n, int64_t k, const int8_t* w);

// Packed float32 weights (ops/packed.h): w [n, k] reordered once, into oneDNN's layout for a matmul
// primitive with a run-time row count (wide outputs: one primitive per thread over its block of
// columns, packed.cc), or at the AVX2 level into the project's own panels (matmul_panels);
// y [m, n] = act(x [m, k] · wᵀ (+ bias)), in the same pass. bf16 (where bf16_native()): w rounded to
// bfloat16 once and packed for oneDNN's bf16 matmul, x rounded at each product (to_bf16, the
// rounding of every bf16 product here), float32 sums: Precision::kBf16's definition.
std::shared_ptr<const void> pack_weight(int64_t n, int64_t k, const float* w, const float* bias,
                                        ops::Activation act, bool bf16 = false);
void matmul_packed(const void* packed, int64_t m, const float* x, float* y);
// Whether packing a weight can pay at this level (pack_weight is then worth calling), and whether
// the packed product beats BLAS at this shape (measured: docs/performance.md).
bool packing_pays(int64_t n, int64_t k);
bool packed_product_wins(int64_t m, int64_t n, int64_t k);
const char* packed_path();  // how packed float32 products run at this level, in a sentence

}  // namespace tfm::cpu

// Explicit instantiation for both float types, at the end of each kernel file.
#define TFM_INSTANTIATE_FLOAT(MACRO) \
  MACRO(float)                       \
  MACRO(double)
