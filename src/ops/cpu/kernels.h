#pragma once
// CPU kernels behind the device-neutral ops in ops/*.h. Arguments are validated by the ops; these
// take raw pointers and sizes. T is float or double. OpenMP threads share one pool with BLAS.
// Every reduction runs in a fixed order within one thread, so results do not depend on the thread
// count except inside BLAS.
#include <cstdint>
#include <memory>

#include "core/rng.h"

namespace tfm::cpu {

// C[b] = alpha · op(A[b]) · op(B[b]) + beta · C[b] for b < batch; strides in elements (0 broadcasts).
template <class T>
void gemm(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t stride_a, const T* b, int64_t stride_b, T beta, T* c, int64_t stride_c);

// One product with explicit leading dimensions (row-major), for strided views such as one head.
template <class T>
void gemm_ld(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
             const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// gemm with A and B rounded to bfloat16 (to nearest, ties to even) and float32 accumulation:
// oneDNN's bf16 matmul, native with AVX-512 BF16 or AMX, emulated (slower than float32) on other
// AVX-512 CPUs, unavailable without AVX-512 (bf16_supported()).
void gemm_bf16(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t stride_a, const float* b, int64_t stride_b, float beta, float* c,
               int64_t stride_c);
// y = x rounded to bfloat16 as gemm_bf16 rounds its inputs, kept in float32. y may alias x.
void round_to_bf16(int64_t n, const float* x, float* y);
// Whether oneDNN can run gemm_bf16 on this CPU (it needs AVX-512), and whether the CPU has bfloat16
// dot-product instructions (AVX-512 BF16 or AMX-BF16) for it.
bool bf16_supported();
bool bf16_native();

template <class T> void add(int64_t n, const T* a, const T* b, T* y);
template <class T> void add_to(int64_t n, const T* x, T* y);
template <class T> void scale(int64_t n, const T* x, T alpha, T* y);
template <class T> void bias_add(int64_t rows, int64_t cols, const T* x, const T* bias, T* y);
template <class T> void bias_add_backward(int64_t rows, int64_t cols, const T* dy, T* dbias);
template <class T> void relu(int64_t n, const T* x, T* y);
template <class T> void relu_backward(int64_t n, const T* y, const T* dy, T* dx);
template <class T> void dropout(int64_t n, const T* x, double p, const RngStream& rng, T* y);
template <class T> void dropout_backward(int64_t n, const T* dy, double p, const RngStream& rng, T* dx);
template <class T> double sum_squares(int64_t n, const T* x);

template <class T>
void layer_norm(int64_t rows, int64_t d, const T* x, const T* gamma, const T* beta, double eps, T* y, T* mean,
                T* rstd);
template <class T>
void layer_norm_backward(int64_t rows, int64_t d, const T* dy, const T* x, const T* gamma, const T* mean,
                         const T* rstd, T* dx, T* dgamma, T* dbeta);

template <class T> void softmax(int64_t rows, int64_t cols, const T* x, T* y);
template <class T> void softmax_backward(int64_t rows, int64_t cols, const T* y, const T* dy, T* dx);

struct AttentionDims {
  int64_t batch, queries, keys, heads, d_k, d_v;  // B, T, S, H, d_k, d_v
  int64_t kv_group = 1;  // query batch entries per key/value entry (beams sharing an encoder output)
  int64_t kv_rows = 0;   // with key_rows: R, the rows of each position's slab (k, v: [S, R, H·d])
};
// key_rows: null, or int32 [B, S] (ops::AttentionArgs::key_rows; decoding only).
template <class T>
void attention(const AttentionDims& dims, const T* q, const T* k, const T* v, bool causal,
               const int32_t* key_lengths, const int32_t* key_rows, double dropout, const RngStream& rng, T* probs,
               T* out);
template <class T>
void attention_backward(const AttentionDims& dims, const T* q, const T* k, const T* v, bool causal,
                        const int32_t* key_lengths, double dropout, const RngStream& rng, const T* probs,
                        const T* dout, T* dq, T* dk, T* dv);

template <class T>
void embedding(int64_t n, int64_t d, const int32_t* ids, const T* table, double scale, T* out);
template <class T>
void embedding_backward(int64_t n, int64_t d, const int32_t* ids, const T* dout, double scale, T* dtable);

template <class T> void add_positional_encoding(int64_t batch, int64_t len, int64_t d, int64_t start, T* x);

// Returns Σ loss over counted rows; row_loss (may be null) gets each row's loss (0 when ignored).
template <class T>
double cross_entropy(int64_t rows, int64_t vocab, const T* logits, const int32_t* targets, double smoothing,
                     int32_t ignore_index, T* lse);
// dlogits += the gradient, or (accumulate false) dlogits = the gradient, where dlogits may be logits.
template <class T>
void cross_entropy_backward(int64_t rows, int64_t vocab, const T* logits, const int32_t* targets, const T* lse,
                            double smoothing, int32_t ignore_index, double dloss, T* dlogits, bool accumulate);

template <class T>
void adam_step(int64_t n, T* params, const T* grads, T* m, T* v, double lr, double beta1, double beta2, double eps,
               int64_t step);

// Byte copies (any dtype): the first copy_bytes of dst row i = those of src row indices[i] (rows
// row_bytes apart).
void copy_rows(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, const char* src, char* dst);
void copy_bytes(int64_t n, const char* src, char* dst);  // memcpy, on every thread when large
// dst row r (width_bytes, rows contiguous) = width_bytes of src row r from offset_bytes (rows
// row_bytes apart), for `rows` rows.
void copy_columns(int64_t rows, int64_t row_bytes, int64_t offset_bytes, int64_t width_bytes, const char* src,
                  char* dst);

// Per row: the k largest allowed logits as log-probabilities (sorted), their ids, and log Σ exp.
template <class T>
void top_k_logprobs(int64_t rows, int64_t V, int64_t k, const T* logits, const uint8_t* banned, double* logp,
                    int32_t* ids, double* lse);

// int8: per-row symmetric quantization of w [rows, cols]; y [m, n] = x [m, k] · (w [n, k] · scale)ᵀ
// with x quantized per row to u8 (offset 128), via oneDNN's VNNI GEMM (+ bias, then max(0, ·)
// with relu, in the dequantization pass).
void quantize_rows(int64_t rows, int64_t cols, const float* w, int8_t* q, float* scale);
void matmul_int8(int64_t m, int64_t n, int64_t k, const float* x, const int8_t* w, const float* w_scale,
                 const float* bias, bool relu, float* y);

// Packed float32 weights (ops/packed.h): w [n, k] reordered once into oneDNN's layout for a matmul
// primitive with a run-time row count (wide outputs: one primitive per thread over its block of
// columns, packed.cc); y [m, n] = x [m, k] · wᵀ (+ bias, then max(0, ·) with relu, in the same pass).
std::shared_ptr<const void> pack_weight(int64_t n, int64_t k, const float* w, const float* bias, bool relu);
void matmul_packed(const void* packed, int64_t m, const float* x, float* y);
// Whether the packed product beats BLAS at this shape (measured: docs/performance.md).
bool packed_product_wins(int64_t m, int64_t n, int64_t k);

}  // namespace tfm::cpu

// Explicit instantiation for both float types, at the end of each kernel file.
#define TFM_INSTANTIATE_FLOAT(MACRO) \
  MACRO(float)                       \
  MACRO(double)
