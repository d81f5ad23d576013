#pragma once
// The CUDA backend's ops, one function for each method of Kernels (kernels.h says what each does),
// grouped by the file that defines them; backend.cu implements Kernels by calling them. Each follows
// the arithmetic of its CPU kernel (ops/cpu/simd), sums in double where the CPU's do, and reduces in a
// fixed order: the same inputs give the same bits on every run.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "ops/activation.h"
#include "ops/cuda/kernels.h"

namespace tfm::cuda {

// elementwise.cu
void add(int64_t n, const float* a, const float* b, float* y);
void add_to(int64_t n, const float* x, float* y);
void scale(int64_t n, const float* x, float alpha, float* y);
void bias_add(int64_t rows, int64_t cols, const float* x, const float* bias, float* y);
void bias_activate(int64_t rows, int64_t cols, const float* x, const float* bias, ops::Activation act, float* y);
void bias_add_backward(int64_t rows, int64_t cols, const float* dy, float* dbias);
void relu(int64_t n, const float* x, float* y);
void relu_backward(int64_t n, const float* y, const float* dy, float* dx);
void relu_backward_bf16(int64_t n, const void* y16, const float* dy, float* dx);
void activate(int64_t n, ops::Activation act, const float* x, float* y);
void activation_backward(int64_t n, ops::Activation act, const float* pre, const float* dy, float* dx);
// Element i of the flat array kept when uniform(i) ≥ float(p).
void dropout(int64_t n, const float* x, double p, const RngStream& rng, float* y);
double sum_squares(int64_t n, const float* x);

// gemm.cu
void gemm(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, ops::Bf16Input a,
          int64_t stride_a, ops::Bf16Input b, int64_t stride_b, float beta, float* c, int64_t stride_c, bool bf16);
// Row-major strided-batched product with explicit leading dimensions:
//   C_i = alpha · op(A_i) · op(B_i) + beta · C_i,  X_i = X + i · stride_x,  i < batch;
// bf16: A and B rounded to bfloat16 first (they must then be contiguous blocks: lda/ldb their row
// lengths), sums in float32.
void gemm_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta, float* c,
                  int64_t ldc, int64_t stride_c, int64_t batch, bool bf16);

void round_to_bf16(int64_t n, const float* x, float* y);
void to_bf16(int64_t n, const float* x, void* y16);
// How many cuBLASLt products have run with a residual as C (c_in) since the program started.
int64_t residual_products();

// linear.cu
bool linear(int64_t rows, int64_t in, int64_t out, ops::Bf16Input x, ops::Bf16Input w, const float* bias,
            ops::Activation act, float* y, bool bf16, const float* residual);
void linear_backward(int64_t rows, int64_t in, int64_t out, ops::Bf16Input x, ops::Bf16Input w, const float* dy,
                     float* dx, float* dw, float* dbias, bool bf16);
// w[n] rounded into bfloat16 memory of its own (256-byte aligned).
std::shared_ptr<const void> pack_bf16(int64_t n, const float* w);
void linear_packed_bf16(int64_t rows, int64_t in, int64_t out, const float* x, const void* w16, const float* bias,
                        ops::Activation act, float* y, const float* residual);

// attention.cu
void attention(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
               const int32_t* key_lengths, const int32_t* key_rows, double dropout, const RngStream& rng, float* probs,
               float* out);
void attention_backward(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                        const int32_t* key_lengths, double dropout, const RngStream& rng, const float* probs,
                        const float* dout, float* dq, float* dk, float* dv);

// layer_norm.cu
void layer_norm(int64_t rows, int64_t d, const float* x, const float* gamma, const float* beta, double eps, float* y,
                float* mean, float* rstd);
void layer_norm_backward(int64_t rows, int64_t d, const float* dy, const float* x, const float* gamma,
                         const float* mean, const float* rstd, float* dx, float* dgamma, float* dbeta);

// softmax.cu
void softmax(int64_t rows, int64_t cols, const float* x, float* y);
void softmax_backward(int64_t rows, int64_t cols, const float* y, const float* dy, float* dx);

// loss.cu
double cross_entropy(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets, double smoothing,
                     int32_t ignore_index, float* lse);
void cross_entropy_backward(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                            const float* lse, double smoothing, int32_t ignore_index, double dloss, float* dlogits,
                            bool accumulate);
void cross_entropy_backward_bf16(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                                 const float* lse, double smoothing, int32_t ignore_index, double dloss,
                                 void* dlogits16);

// embedding.cu
void embedding(int64_t n, int64_t d, const int32_t* ids, const float* table, double scale, float* out);
void embedding_backward(int64_t n, int64_t d, const int32_t* host_ids, const float* dout, double scale,
                        float* dtable);

// adam.cu
void adam_step(int64_t n, float* params, const float* grads, float* m, float* v, double lr, double beta1,
               double beta2, double eps, int64_t step);

// top_k.cu
bool top_k_logprobs(int64_t rows, int64_t V, int64_t k, const float* logits, const int32_t* banned_ids,
                    int64_t n_banned, double* logp, int32_t* ids, double* lse);

// copy.cu
void copy_rows(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, const char* src, char* dst);
void copy_columns(int64_t rows, int64_t row_bytes, int64_t offset_bytes, int64_t width_bytes, const char* src,
                  char* dst);
void split_columns(int64_t rows, int64_t row_bytes, const std::vector<int64_t>& width_bytes,
                   const std::vector<char*>& dst, const char* src);

// rms_norm.cu
void rms_norm(int64_t rows, int64_t d, const float* x, const float* gamma, double eps, float* y, float* rstd);
void rms_norm_backward(int64_t rows, int64_t d, const float* dy, const float* x, const float* gamma,
                       const float* rstd, float* dx, float* dgamma);

// rotary.cu
void rotary(int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim, const ops::Rotary& rope, int64_t start,
            const int32_t* offsets, bool inverse, const float* x, float* out);

// gated.cu
void gated(int64_t rows, int64_t f, ops::Activation act, const float* pre, float* hidden);
void gated_backward(int64_t rows, int64_t f, ops::Activation act, const float* dhidden, const float* pre,
                    float* dpre);

}  // namespace tfm::cuda
