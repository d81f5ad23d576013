// The build's CUDA kernels (kernels.h): Kernels implemented by the ops of this folder (ops.h), and
// kernels(), which makes it where the machine has a CUDA device.
#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "core/device.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/kernels.h"
#include "ops/cuda/ops.h"

namespace tfm::cuda {
namespace {

using ops::Activation;

class CudaKernels final : public Kernels {
 public:
  void synchronize() override { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

  void add(int64_t n, const float* a, const float* b, float* y) override { cuda::add(n, a, b, y); }
  void add_to(int64_t n, const float* x, float* y) override { cuda::add_to(n, x, y); }
  void scale(int64_t n, const float* x, float alpha, float* y) override { cuda::scale(n, x, alpha, y); }
  void bias_add(int64_t rows, int64_t cols, const float* x, const float* bias, float* y) override {
    cuda::bias_add(rows, cols, x, bias, y);
  }
  void bias_activate(int64_t rows, int64_t cols, const float* x, const float* bias, Activation act,
                     float* y) override {
    cuda::bias_activate(rows, cols, x, bias, act, y);
  }
  void bias_add_backward(int64_t rows, int64_t cols, const float* dy, float* dbias) override {
    cuda::bias_add_backward(rows, cols, dy, dbias);
  }
  void relu(int64_t n, const float* x, float* y) override { cuda::relu(n, x, y); }
  void relu_backward(int64_t n, const float* y, const float* dy, float* dx) override {
    cuda::relu_backward(n, y, dy, dx);
  }
  void relu_backward_bf16(int64_t n, const void* y16, const float* dy, float* dx) override {
    cuda::relu_backward_bf16(n, y16, dy, dx);
  }
  void activate(int64_t n, Activation act, const float* x, float* y) override { cuda::activate(n, act, x, y); }
  void activation_backward(int64_t n, Activation act, const float* pre, const float* dy, float* dx) override {
    cuda::activation_backward(n, act, pre, dy, dx);
  }
  void dropout(int64_t n, const float* x, double p, const RngStream& rng, float* y) override {
    cuda::dropout(n, x, p, rng, y);
  }
  double sum_squares(int64_t n, const float* x) override { return cuda::sum_squares(n, x); }

  void gemm(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, ops::Bf16Input a,
            int64_t stride_a, ops::Bf16Input b, int64_t stride_b, float beta, float* c, int64_t stride_c,
            bool bf16) override {
    cuda::gemm(batch, trans_a, trans_b, m, n, k, alpha, a, stride_a, b, stride_b, beta, c, stride_c, bf16);
  }
  void round_to_bf16(int64_t n, const float* x, float* y) override { cuda::round_to_bf16(n, x, y); }
  void to_bf16(int64_t n, const float* x, void* y16) override { cuda::to_bf16(n, x, y16); }
  bool linear(int64_t rows, int64_t in, int64_t out, ops::Bf16Input x, ops::Bf16Input w, const float* bias,
              Activation act, float* y, bool bf16, const float* residual) override {
    return cuda::linear(rows, in, out, x, w, bias, act, y, bf16, residual);
  }
  void linear_backward(int64_t rows, int64_t in, int64_t out, ops::Bf16Input x, ops::Bf16Input w, const float* dy,
                       float* dx, float* dw, float* dbias, bool bf16) override {
    cuda::linear_backward(rows, in, out, x, w, dy, dx, dw, dbias, bf16);
  }
  int64_t residual_products() const override { return cuda::residual_products(); }
  std::shared_ptr<const void> pack_bf16(int64_t out, int64_t in, const float* w) override {
    return cuda::pack_bf16(out * in, w);
  }
  void linear_packed_bf16(int64_t rows, int64_t in, int64_t out, const float* x, const void* w16, const float* bias,
                          Activation act, float* y, const float* residual) override {
    cuda::linear_packed_bf16(rows, in, out, x, w16, bias, act, y, residual);
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
    cuda::layer_norm(rows, d, x, gamma, beta, eps, y, mean, rstd);
  }
  void layer_norm_backward(int64_t rows, int64_t d, const float* dy, const float* x, const float* gamma,
                           const float* mean, const float* rstd, float* dx, float* dgamma, float* dbeta) override {
    cuda::layer_norm_backward(rows, d, dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
  }

  void softmax(int64_t rows, int64_t cols, const float* x, float* y) override { cuda::softmax(rows, cols, x, y); }
  void softmax_backward(int64_t rows, int64_t cols, const float* y, const float* dy, float* dx) override {
    cuda::softmax_backward(rows, cols, y, dy, dx);
  }

  double cross_entropy(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets, double smoothing,
                       int32_t ignore_index, float* lse) override {
    return cuda::cross_entropy(rows, vocab, logits, targets, smoothing, ignore_index, lse);
  }
  void cross_entropy_backward(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                              const float* lse, double smoothing, int32_t ignore_index, double dloss, float* dlogits,
                              bool accumulate) override {
    cuda::cross_entropy_backward(rows, vocab, logits, targets, lse, smoothing, ignore_index, dloss, dlogits,
                                 accumulate);
  }
  void cross_entropy_backward_bf16(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                                   const float* lse, double smoothing, int32_t ignore_index, double dloss,
                                   void* dlogits16) override {
    cuda::cross_entropy_backward_bf16(rows, vocab, logits, targets, lse, smoothing, ignore_index, dloss, dlogits16);
  }

  void embedding(int64_t n, int64_t d, const int32_t* ids, const float* table, double scale, float* out) override {
    cuda::embedding(n, d, ids, table, scale, out);
  }
  void embedding_backward(int64_t n, int64_t d, const int32_t* host_ids, const float* dout, double scale,
                          float* dtable) override {
    cuda::embedding_backward(n, d, host_ids, dout, scale, dtable);
  }

  void adam_step(int64_t n, float* params, const float* grads, float* m, float* v, double lr, double beta1,
                 double beta2, double eps, int64_t step) override {
    cuda::adam_step(n, params, grads, m, v, lr, beta1, beta2, eps, step);
  }

  bool top_k_logprobs(int64_t rows, int64_t V, int64_t k, const float* logits, const int32_t* banned_ids,
                      int64_t n_banned, double* logp, int32_t* ids, double* lse) override {
    return cuda::top_k_logprobs(rows, V, k, logits, banned_ids, n_banned, logp, ids, lse);
  }

  void copy_rows(int64_t n, int64_t row_bytes, int64_t copy_bytes, const int32_t* indices, const char* src,
                 char* dst) override {
    cuda::copy_rows(n, row_bytes, copy_bytes, indices, src, dst);
  }
  void copy_columns(int64_t rows, int64_t row_bytes, int64_t offset_bytes, int64_t width_bytes, const char* src,
                    char* dst) override {
    cuda::copy_columns(rows, row_bytes, offset_bytes, width_bytes, src, dst);
  }
  void split_columns(int64_t rows, int64_t row_bytes, const std::vector<int64_t>& width_bytes,
                     const std::vector<char*>& dst, const char* src) override {
    cuda::split_columns(rows, row_bytes, width_bytes, dst, src);
  }

  void rms_norm(int64_t rows, int64_t d, const float* x, const float* gamma, double eps, float* y,
                float* rstd) override {
    cuda::rms_norm(rows, d, x, gamma, eps, y, rstd);
  }
  void rms_norm_backward(int64_t rows, int64_t d, const float* dy, const float* x, const float* gamma,
                         const float* rstd, float* dx, float* dgamma) override {
    cuda::rms_norm_backward(rows, d, dy, x, gamma, rstd, dx, dgamma);
  }
  void rotary(int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim, const ops::Rotary& rope, int64_t start,
              const int32_t* offsets, bool inverse, const float* x, float* out) override {
    cuda::rotary(batch, tokens, heads, head_dim, rope, start, offsets, inverse, x, out);
  }
  void gated(int64_t rows, int64_t f, Activation act, const float* pre, float* hidden) override {
    cuda::gated(rows, f, act, pre, hidden);
  }
  void gated_backward(int64_t rows, int64_t f, Activation act, const float* dhidden, const float* pre,
                      float* dpre) override {
    cuda::gated_backward(rows, f, act, dhidden, pre, dpre);
  }
};

}  // namespace

Kernels* kernels() {
  // Only where the machine has a CUDA device (the memory backend is made only then).
  static Kernels* const k = builtin_device_memory(Device::CUDA) != nullptr ? new CudaKernels : nullptr;
  return k;
}

}  // namespace tfm::cuda
