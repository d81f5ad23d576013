#pragma once
// The CUDA kernels behind the device-neutral ops in ops/*.h, as ops/cpu/kernels.h is for
// the CPU: the ops validate their arguments, then call these with raw device pointers and sizes
// (ops/dispatch.h picks the device). Float32 only. Plain C++: no CUDA header is included, so the ops
// compile the same with and without the CUDA toolkit; the build's backend is found at link time
// (ops/cuda/*.cu, or ops/cuda/none.cc without CUDA) and only where the machine has a CUDA device.
//
// Every kernel runs on the device's default stream in call order; results that come back to the host
// (sums, the loss) are read after the work before them is done. Every reduction runs in a fixed order,
// so the same inputs give the same bits on every run (no floating-point atomics).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "ops/activation.h"
#include "ops/bf16_input.h"
#include "ops/rotary_rate.h"

namespace tfm::cuda {

struct AttentionDims {
  int64_t batch, queries, keys, heads, d_k, d_v;  // B, T, S, H, d_k, d_v
  int64_t kv_group = 1;  // query batch entries per key/value entry
  int64_t kv_rows = 0;   // with key_rows: R, the rows of each position's slab (k, v: [S, R, KV·d])
  int64_t kv_heads = 0;  // KV, the key/value heads (set by the ops: 1 ≤ KV ≤ H, H a multiple of KV)
  int64_t window = 0;    // sliding window (ops::AttentionArgs::window); 0 = none
};

class Kernels {
 public:
  virtual ~Kernels() = default;

  // Returns once all work queued on the device is done (profiling; reading results back).
  virtual void synchronize() = 0;

  // Elementwise (ops/elementwise.h). n elements; rows × cols for the bias ops.
  virtual void add(int64_t n, const float* a, const float* b, float* y) = 0;
  virtual void add_to(int64_t n, const float* x, float* y) = 0;
  virtual void scale(int64_t n, const float* x, float alpha, float* y) = 0;
  virtual void bias_add(int64_t rows, int64_t cols, const float* x, const float* bias, float* y) = 0;
  virtual void bias_activate(int64_t rows, int64_t cols, const float* x, const float* bias, ops::Activation act,
                             float* y) = 0;
  virtual void bias_add_backward(int64_t rows, int64_t cols, const float* dy, float* dbias) = 0;
  virtual void relu(int64_t n, const float* x, float* y) = 0;
  virtual void relu_backward(int64_t n, const float* y, const float* dy, float* dx) = 0;
  virtual void relu_backward_bf16(int64_t n, const void* y16, const float* dy, float* dx) = 0;  // y in bfloat16
  virtual void activate(int64_t n, ops::Activation act, const float* x, float* y) = 0;
  virtual void activation_backward(int64_t n, ops::Activation act, const float* pre, const float* dy, float* dx) = 0;
  // The CPU's mask: element i kept when uniform(i) ≥ float(p), scaled by float(1 / (1 − p)).
  virtual void dropout(int64_t n, const float* x, double p, const RngStream& rng, float* y) = 0;
  virtual double sum_squares(int64_t n, const float* x) = 0;

  // Products (ops/matmul.h), row-major, strides in elements between batch entries; bf16: the inputs
  // rounded to bfloat16 (those already bfloat16 read as they are: ops/bf16_input.h), float32 sums;
  // not bf16: both inputs float32.
  virtual void gemm(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    ops::Bf16Input a, int64_t stride_a, ops::Bf16Input b, int64_t stride_b, float beta, float* c,
                    int64_t stride_c, bool bf16) = 0;
  virtual void round_to_bf16(int64_t n, const float* x, float* y) = 0;
  // y16[i] = x[i] rounded to bfloat16 (ops::to_bf16), y16 holding n bfloat16 values.
  virtual void to_bf16(int64_t n, const float* x, void* y16) = 0;
  // A linear layer (ops/matmul.h's linear and linear_backward):
  //   y[rows, out] = act(x[rows, in] · w[out, in]ᵀ + bias): one cuBLASLt product with the bias and
  //   the activation (none or ReLU) in its epilogue; false, with nothing changed, for another
  //   activation or where cuBLASLt has no algorithm (the caller then runs gemm and the bias ops);
  //   dx += dy · w (dx may be null), dw += dyᵀ · x, dbias += Σ_rows dy: in float32 the bias gradient
  //   from the weight gradient's product (cuBLASLt's epilogue); in bf16 dy, w and x rounded once for
  //   both products, and the bias gradient from float32 dy.
  //   residual (may be null; act none only): y = x · wᵀ + residual + bias, residual the product's C
  //   (beta 1), not y.
  //   x and w as gemm's inputs: bfloat16 ones only with bf16.
  virtual bool linear(int64_t rows, int64_t in, int64_t out, ops::Bf16Input x, ops::Bf16Input w, const float* bias,
                      ops::Activation act, float* y, bool bf16, const float* residual = nullptr) = 0;
  virtual void linear_backward(int64_t rows, int64_t in, int64_t out, ops::Bf16Input x, ops::Bf16Input w,
                               const float* dy, float* dx, float* dw, float* dbias, bool bf16) = 0;
  // How many products so far took a residual as their C in the one cuBLASLt call (linear's and
  // linear_packed_bf16's), not through the fallback's separate add: for the tests.
  virtual int64_t residual_products() const = 0;

  // Inference's packed weights (ops/packed.h) on the device: pack_bf16 rounds w [out, in] to bfloat16
  // once, into device memory of its own (2 · out · in bytes, freed with the pointer);
  // linear_packed_bf16: y[rows, out] = act(bf16(x) · w16ᵀ + bias), float32 sums (Precision::kBf16's
  // definition), bias (may be null) and act none or ReLU in cuBLASLt's epilogue, another act after it;
  // with a residual (may be null; act none only) y = bf16(x) · w16ᵀ + residual + bias, as linear's.
  virtual std::shared_ptr<const void> pack_bf16(int64_t out, int64_t in, const float* w) = 0;
  virtual void linear_packed_bf16(int64_t rows, int64_t in, int64_t out, const float* x, const void* w16,
                                  const float* bias, ops::Activation act, float* y,
                                  const float* residual = nullptr) = 0;

  // Attention (ops/attention.h); key_lengths and key_rows are device pointers or null.
  virtual void attention(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                         const int32_t* key_lengths, const int32_t* key_rows, double dropout, const RngStream& rng,
                         float* probs, float* out) = 0;
  virtual void attention_backward(const AttentionDims& d, const float* q, const float* k, const float* v, bool causal,
                                  const int32_t* key_lengths, double dropout, const RngStream& rng,
                                  const float* probs, const float* dout, float* dq, float* dk, float* dv) = 0;

  // Layer norm (ops/layer_norm.h).
  virtual void layer_norm(int64_t rows, int64_t d, const float* x, const float* gamma, const float* beta, double eps,
                          float* y, float* mean, float* rstd) = 0;
  virtual void layer_norm_backward(int64_t rows, int64_t d, const float* dy, const float* x, const float* gamma,
                                   const float* mean, const float* rstd, float* dx, float* dgamma, float* dbeta) = 0;

  // Softmax over rows (ops/softmax.h).
  virtual void softmax(int64_t rows, int64_t cols, const float* x, float* y) = 0;
  virtual void softmax_backward(int64_t rows, int64_t cols, const float* y, const float* dy, float* dx) = 0;

  // Label-smoothed cross-entropy (ops/loss.h); targets on the device. Returns the loss summed over
  // counted rows (in row order, in double).
  virtual double cross_entropy(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                               double smoothing, int32_t ignore_index, float* lse) = 0;
  virtual void cross_entropy_backward(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                                      const float* lse, double smoothing, int32_t ignore_index, double dloss,
                                      float* dlogits, bool accumulate) = 0;
  // The same gradient written rounded to bfloat16 (dlogits16: bfloat16 [rows, vocab]).
  virtual void cross_entropy_backward_bf16(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                                           const float* lse, double smoothing, int32_t ignore_index, double dloss,
                                           void* dlogits16) = 0;

  // Embedding (ops/embedding.h): ids on the device; the backward also takes them on the host
  // (host_ids), to group each id's positions so that each row of dtable is summed in position order.
  virtual void embedding(int64_t n, int64_t d, const int32_t* ids, const float* table, double scale, float* out) = 0;
  virtual void embedding_backward(int64_t n, int64_t d, const int32_t* host_ids, const float* dout, double scale,
                                  float* dtable) = 0;

  // Adam over flat buffers (ops/adam.h), in the CPU kernel's arithmetic.
  virtual void adam_step(int64_t n, float* params, const float* grads, float* m, float* v, double lr, double beta1,
                         double beta2, double eps, int64_t step) = 0;

  // The decoding step's selection (ops/top_k.h) over float32 logits [rows, V]: per row the k best
  // allowed columns (ties: the lower id first; NaN never selected), log-probabilities against the
  // row's log Σ exp (summed in double), −inf and −1 where fewer than k are allowed. banned_ids: n_banned
  // column ids on the host. False, with nothing done, where k > kMaxTopK or n_banned > kMaxBanned (the
  // caller then selects on the host).
  static constexpr int64_t kMaxTopK = 16, kMaxBanned = 8;
  virtual bool top_k_logprobs(int64_t rows, int64_t V, int64_t k, const float* logits, const int32_t* banned_ids,
                              int64_t n_banned, double* logp, int32_t* ids, double* lse) = 0;

  // Byte moves (ops/copy.h): rows picked by device int32 indices; a column band of each row.
  virtual void copy_rows(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, const char* src,
                         char* dst) = 0;
  virtual void copy_columns(int64_t rows, int64_t row_bytes, int64_t offset_bytes, int64_t width_bytes,
                            const char* src, char* dst) = 0;
  // Every row of src [rows, row_bytes] cut into column bands side by side, band i (width_bytes[i],
  // summing to row_bytes) into dst[i] [rows, width_bytes[i]]: one kernel where the bands are whole
  // 4-byte words (at most kMaxBands of them), copy_columns per band otherwise.
  static constexpr int kMaxBands = 4;
  virtual void split_columns(int64_t rows, int64_t row_bytes, const std::vector<int64_t>& width_bytes,
                             const std::vector<char*>& dst, const char* src) = 0;

  // RMSNorm (ops/rms_norm.h).
  virtual void rms_norm(int64_t rows, int64_t d, const float* x, const float* gamma, double eps, float* y,
                        float* rstd) = 0;
  virtual void rms_norm_backward(int64_t rows, int64_t d, const float* dy, const float* x, const float* gamma,
                                 const float* rstd, float* dx, float* dgamma) = 0;
  // Rotary position embedding (ops/rotary.h) of x [batch, tokens, heads · head_dim]; offsets: a device
  // pointer or null; out may be x.
  virtual void rotary(int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim, const ops::Rotary& rope,
                      int64_t start, const int32_t* offsets, bool inverse, const float* x, float* out) = 0;
  // Gated activation (ops/gated.h): pre [rows, 2f], hidden [rows, f]; dpre written, may be pre.
  virtual void gated(int64_t rows, int64_t f, ops::Activation act, const float* pre, float* hidden) = 0;
  virtual void gated_backward(int64_t rows, int64_t f, ops::Activation act, const float* dhidden, const float* pre,
                              float* dpre) = 0;
};

// The build's CUDA kernels, or nullptr (no CUDA in this build, or no CUDA device on this machine).
Kernels* kernels();

}  // namespace tfm::cuda
