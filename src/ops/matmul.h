#pragma once
// Matrix product through BLAS: C = alpha · op(A) · op(B) + beta · C, op(X) = Xᵀ when trans_x.
//   op(A): [..., M, K]   op(B): [..., K, N]   C: [..., M, N]
// Batched when A, B and C share their leading dims (one product per batch entry, e.g. per head).
// When B is a matrix and A has leading dims (a weight applied to every row), A's leading dims fold
// into M: [B, T, K] · [K, N] → [B, T, N]. That fold needs trans_a = false.
#include "core/tensor.h"
#include "ops/activation.h"

namespace tfm::ops {

// What a product's inputs are rounded to before they are multiplied; sums are float32 either way.
enum class Precision {
  kFloat32,  // as they are
  kBf16,     // bfloat16 (round to nearest even; 8 significant bits, 7 stored): mixed-precision training's products
};

struct MatmulArgs {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;  // 0 overwrites C, 1 accumulates into it
  // kBf16 needs a float32 C; A and B float32 (rounded on each call) or bfloat16 (DType::BF16).
  Precision precision = Precision::kFloat32;
};

void matmul(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulArgs& args = {});

// Gradients of C = alpha · op(A) · op(B) (args.beta is ignored), accumulated (+=) into da and db in
// the layouts of A and B. Derivation, with A' = op(A), B' = op(B): dA' = alpha · dC · B'ᵀ and
// dB' = alpha · A'ᵀ · dC, transposed back where op() transposed. A null pointer skips that gradient.
void matmul_backward(const Tensor& a, const Tensor& b, const Tensor& dc, const Tensor* da, const Tensor* db,
                     const MatmulArgs& args = {});

// A linear layer, y = act(x · wᵀ + bias): x [N, in] (N: all leading dims), w [out, in], bias [out],
// y [N, out]; in bf16 precision x and w may hold bfloat16 values (MatmulArgs::precision). Defined as matmul, then bias_activate; on a GPU one cuBLASLt product with the bias and
// activation (none or ReLU) in its epilogue, which rounds once less (the bias is added to the
// product's float32 sum before it is stored, not after).
// With a residual r [N, out] (act none only): y = r + (x · wᵀ + bias), a residual connection's sum
// in the same call: on the CPU the add after the product (the arithmetic of ops::add(r, y, y)); on
// a GPU r goes into the product as its C (beta 1), so (x · wᵀ + r) + bias, one pass fewer and the
// sums in another order. r may not be y.
void linear(const Tensor& x, const Tensor& w, const Tensor& bias, Activation act, const Tensor& y,
            Precision precision = Precision::kFloat32, const Tensor& residual = Tensor());
// The checks of such a residual against the output y (y's dtype, shape and device, not y itself,
// act none), shared by the products that take one (ops/packed.h); undefined passes.
void check_residual(const char* op, const Tensor& residual, const Tensor& y, Activation act);
// Its gradients: dx += dy · w (when dx is given), dw += dyᵀ · x, dbias += Σ_N dy (float32 dy in either
// precision). On a GPU in float32 the bias gradient comes from the weight gradient's product
// (cuBLASLt's epilogue).
void linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, const Tensor* dx, const Tensor& dw,
                     const Tensor& dbias, Precision precision = Precision::kFloat32);

// x (float32) as bfloat16 values (DType::BF16), rounded as Precision::kBf16 rounds a product's inputs:
// what mixed-precision training keeps of the activations its products read (Context::product_input),
// so that each is rounded once, not by every product that reads it. y: bfloat16, x's shape and device.
// The returning form gives x itself when it is bfloat16 already.
void to_bf16(const Tensor& x, const Tensor& y);
Tensor to_bf16(const Tensor& x);

// y = x rounded to bfloat16 precision as Precision::kBf16 rounds a product's inputs, still float32
// (the reference of the tests). y may be x.
void round_to_bf16(const Tensor& x, const Tensor& y);

// Whether Precision::kBf16 products run on bfloat16 instructions here (AVX-512 BF16 or AMX);
// elsewhere they are emulated with the same definition, slower than float32 ones. bf16_path() says
// how, in a sentence.
bool bf16_native();
const char* bf16_path();

}  // namespace tfm::ops
