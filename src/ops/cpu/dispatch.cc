// tfm::cpu's per-build kernels (simd/kernels.inc): each call goes to the SIMD build of the level in
// use (isa.h), compiled in ops/cpu/simd into tfm::cpu::generic, ::avx2 and ::avx512.
#include "core/error.h"
#include "ops/cpu/isa.h"
#include "ops/cpu/kernels.h"

namespace tfm::cpu {

namespace generic {
#include "ops/cpu/simd/kernels.inc"
}
#if defined(TFM_SIMD_X86)
namespace avx2 {
#include "ops/cpu/simd/kernels.inc"
}
namespace avx512 {
#include "ops/cpu/simd/kernels.inc"
}
#endif

namespace {
SimdBuild build() {
  static const SimdBuild b = simd_build(isa());
  return b;
}
}  // namespace

// return the build's fn(args...)
#if defined(TFM_SIMD_X86)
#define TFM_SIMD_CALL(fn, ...)                                  \
  switch (build()) {                                            \
    case SimdBuild::kAvx512: return avx512::fn(__VA_ARGS__);        \
    case SimdBuild::kAvx2: return avx2::fn(__VA_ARGS__);            \
    case SimdBuild::kGeneric: break;                                \
  }                                                             \
  return generic::fn(__VA_ARGS__)
#else
#define TFM_SIMD_CALL(fn, ...) \
  build();                     \
  return generic::fn(__VA_ARGS__)
#endif

template <class T>
void add(int64_t n, const T* a, const T* b, T* y) {
  TFM_SIMD_CALL(add<T>, n, a, b, y);
}
template <class T>
void add_to(int64_t n, const T* x, T* y) {
  TFM_SIMD_CALL(add_to<T>, n, x, y);
}
template <class T>
void scale(int64_t n, const T* x, T alpha, T* y) {
  TFM_SIMD_CALL(scale<T>, n, x, alpha, y);
}
template <class T>
void bias_add(int64_t rows, int64_t cols, const T* x, const T* bias, T* y) {
  TFM_SIMD_CALL(bias_add<T>, rows, cols, x, bias, y);
}
template <class T>
void bias_add_backward(int64_t rows, int64_t cols, const T* dy, T* dbias) {
  TFM_SIMD_CALL(bias_add_backward<T>, rows, cols, dy, dbias);
}
template <class T>
void relu(int64_t n, const T* x, T* y) {
  TFM_SIMD_CALL(relu<T>, n, x, y);
}
template <class T>
void relu_backward(int64_t n, const T* y, const T* dy, T* dx) {
  TFM_SIMD_CALL(relu_backward<T>, n, y, dy, dx);
}
template <class T>
void activate(int64_t n, ops::Activation act, const T* x, T* y) {
  TFM_SIMD_CALL(activate<T>, n, act, x, y);
}
template <class T>
void activation_backward(int64_t n, ops::Activation act, const T* pre, const T* dy, T* dx) {
  TFM_SIMD_CALL(activation_backward<T>, n, act, pre, dy, dx);
}
template <class T>
void dropout(int64_t n, const T* x, double p, const RngStream& rng, T* y) {
  TFM_SIMD_CALL(dropout<T>, n, x, p, rng, y);
}
template <class T>
double sum_squares(int64_t n, const T* x) {
  TFM_SIMD_CALL(sum_squares<T>, n, x);
}
template <class T>
void layer_norm(int64_t rows, int64_t d, const T* x, const T* gamma, const T* beta, double eps, T* y, T* mean,
                T* rstd) {
  TFM_SIMD_CALL(layer_norm<T>, rows, d, x, gamma, beta, eps, y, mean, rstd);
}
template <class T>
void layer_norm_backward(int64_t rows, int64_t d, const T* dy, const T* x, const T* gamma, const T* mean,
                         const T* rstd, T* dx, T* dgamma, T* dbeta) {
  TFM_SIMD_CALL(layer_norm_backward<T>, rows, d, dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}
template <class T>
void softmax(int64_t rows, int64_t cols, const T* x, T* y) {
  TFM_SIMD_CALL(softmax<T>, rows, cols, x, y);
}
template <class T>
void softmax_backward(int64_t rows, int64_t cols, const T* y, const T* dy, T* dx) {
  TFM_SIMD_CALL(softmax_backward<T>, rows, cols, y, dy, dx);
}
template <class T>
void attention(const AttentionDims& dims, const T* q, const T* k, const T* v, bool causal,
               const int32_t* key_lengths, const int32_t* key_rows, double dropout, const RngStream& rng, T* probs,
               T* out) {
  TFM_SIMD_CALL(attention<T>, dims, q, k, v, causal, key_lengths, key_rows, dropout, rng, probs, out);
}
template <class T>
void attention_backward(const AttentionDims& dims, const T* q, const T* k, const T* v, bool causal,
                        const int32_t* key_lengths, double dropout, const RngStream& rng, const T* probs,
                        const T* dout, T* dq, T* dk, T* dv) {
  TFM_SIMD_CALL(attention_backward<T>, dims, q, k, v, causal, key_lengths, dropout, rng, probs, dout, dq, dk, dv);
}
template <class T>
void embedding(int64_t n, int64_t d, const int32_t* ids, const T* table, double scale, T* out) {
  TFM_SIMD_CALL(embedding<T>, n, d, ids, table, scale, out);
}
template <class T>
void embedding_backward(int64_t n, int64_t d, const int32_t* ids, const T* dout, double scale, T* dtable) {
  TFM_SIMD_CALL(embedding_backward<T>, n, d, ids, dout, scale, dtable);
}
template <class T>
double cross_entropy(int64_t rows, int64_t vocab, const T* logits, const int32_t* targets, double smoothing,
                     int32_t ignore_index, T* lse) {
  TFM_SIMD_CALL(cross_entropy<T>, rows, vocab, logits, targets, smoothing, ignore_index, lse);
}
template <class T>
void cross_entropy_backward(int64_t rows, int64_t vocab, const T* logits, const int32_t* targets, const T* lse,
                            double smoothing, int32_t ignore_index, double dloss, T* dlogits, bool accumulate) {
  TFM_SIMD_CALL(cross_entropy_backward<T>, rows, vocab, logits, targets, lse, smoothing, ignore_index, dloss, dlogits,
                accumulate);
}
template <class T>
void adam_step(int64_t n, T* params, const T* grads, T* m, T* v, double lr, double beta1, double beta2, double eps,
               int64_t step) {
  TFM_SIMD_CALL(adam_step<T>, n, params, grads, m, v, lr, beta1, beta2, eps, step);
}
template <class T>
void top_k_logprobs(int64_t rows, int64_t V, int64_t k, const T* logits, const uint8_t* banned, double* logp,
                    int32_t* ids, double* lse) {
  TFM_SIMD_CALL(top_k_logprobs<T>, rows, V, k, logits, banned, logp, ids, lse);
}

void to_bf16(int64_t n, const float* x, uint16_t* y16) { TFM_SIMD_CALL(to_bf16, n, x, y16); }
void round_to_bf16(int64_t n, const float* x, float* y) { TFM_SIMD_CALL(round_to_bf16, n, x, y); }
void from_bf16(int64_t n, const uint16_t* x16, float* y) { TFM_SIMD_CALL(from_bf16, n, x16, y); }
void cross_entropy_backward_bf16(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                                 const float* lse, double smoothing, int32_t ignore_index, double dloss,
                                 uint16_t* dlogits16) {
  TFM_SIMD_CALL(cross_entropy_backward_bf16, rows, vocab, logits, targets, lse, smoothing, ignore_index, dloss,
                dlogits16);
}
void bias_add_backward_bf16(int64_t rows, int64_t cols, const float* dy, float* dbias, uint16_t* dy16) {
  TFM_SIMD_CALL(bias_add_backward_bf16, rows, cols, dy, dbias, dy16);
}
void relu_backward_bf16(int64_t n, const uint16_t* y16, const float* dy, float* dx) {
  TFM_SIMD_CALL(relu_backward_bf16, n, y16, dy, dx);
}
void quantize_rows(int64_t rows, int64_t cols, const float* w, int8_t* q, float* scale) {
  TFM_SIMD_CALL(quantize_rows, rows, cols, w, q, scale);
}
void quantize_activations(int64_t m, int64_t k, const float* x, int levels, uint8_t* xq, float* x_scale) {
  TFM_SIMD_CALL(quantize_activations, m, k, x, levels, xq, x_scale);
}
void dequantize_rows(int64_t rows, int64_t c0, int64_t nc, const int32_t* acc, const float* x_scale,
                     const float* w_scale, const float* bias, ops::Activation act, float* y, int64_t ldy) {
  TFM_SIMD_CALL(dequantize_rows, rows, c0, nc, acc, x_scale, w_scale, bias, act, y, ldy);
}

int64_t panel_floats(int64_t n, int64_t k) { TFM_SIMD_CALL(panel_floats, n, k); }
void pack_panels(int64_t n, int64_t k, const float* w, float* panels) { TFM_SIMD_CALL(pack_panels, n, k, w, panels); }
void matmul_panels(int64_t m, int64_t n, int64_t k, const float* x, const float* panels, const float* bias,
                   ops::Activation act, float* y) {
  TFM_SIMD_CALL(matmul_panels, m, n, k, x, panels, bias, act, y);
}

int64_t int8_panel_bytes(int64_t n, int64_t k) { TFM_SIMD_CALL(int8_panel_bytes, n, k); }
void pack_int8_panels(int64_t n, int64_t k, const int8_t* w, int32_t offset, void* out) {
  TFM_SIMD_CALL(pack_int8_panels, n, k, w, offset, out);
}
void matmul_int8_panels(int64_t m, int64_t c0, int64_t nc, int64_t k, const uint8_t* xq, const void* packed, int64_t n,
                        int32_t* acc) {
  TFM_CHECK(c0 % 16 == 0 && c0 >= 0 && nc >= 0 && c0 + nc <= n && k % 4 == 0, "matmul_int8_panels: columns [", c0,
            ", ", c0 + nc, ") of ", n, " at depth ", k, ": c0 must be a multiple of 16 and k of 4");
  TFM_SIMD_CALL(matmul_int8_panels, m, c0, nc, k, xq, packed, n, acc);
}

template <class T>
void rms_norm(int64_t rows, int64_t d, const T* x, const T* gamma, double eps, T* y, T* rstd) {
  TFM_SIMD_CALL(rms_norm<T>, rows, d, x, gamma, eps, y, rstd);
}
template <class T>
void rms_norm_backward(int64_t rows, int64_t d, const T* dy, const T* x, const T* gamma, const T* rstd, T* dx,
                       T* dgamma) {
  TFM_SIMD_CALL(rms_norm_backward<T>, rows, d, dy, x, gamma, rstd, dx, dgamma);
}
template <class T>
void rotary(int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim, const ops::Rotary& rope, int64_t start,
            const int32_t* offsets, bool inverse, const T* x, T* out) {
  TFM_SIMD_CALL(rotary<T>, batch, tokens, heads, head_dim, rope, start, offsets, inverse, x, out);
}
template <class T>
void gated(int64_t rows, int64_t f, ops::Activation act, const T* pre, T* hidden) {
  TFM_SIMD_CALL(gated<T>, rows, f, act, pre, hidden);
}
template <class T>
void gated_backward(int64_t rows, int64_t f, ops::Activation act, const T* dhidden, const T* pre, T* dpre) {
  TFM_SIMD_CALL(gated_backward<T>, rows, f, act, dhidden, pre, dpre);
}

#define INSTANTIATE(T)                                                                                 \
  TFM_INSTANTIATE_ELEMENTWISE(T) TFM_INSTANTIATE_LAYER_NORM(T) TFM_INSTANTIATE_SOFTMAX(T)                \
  TFM_INSTANTIATE_ATTENTION(T) TFM_INSTANTIATE_EMBEDDING(T)                                           \
  TFM_INSTANTIATE_LOSS(T) TFM_INSTANTIATE_ADAM(T) TFM_INSTANTIATE_TOP_K(T)
TFM_INSTANTIATE_FLOAT(INSTANTIATE)
#define INSTANTIATE_FAMILY(T) TFM_INSTANTIATE_RMS_NORM(T) TFM_INSTANTIATE_ROTARY(T) TFM_INSTANTIATE_GATED(T)
TFM_INSTANTIATE_FLOAT(INSTANTIATE_FAMILY)

}  // namespace tfm::cpu
