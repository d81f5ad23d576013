// The CUDA backend against the CPU: every op on the same inputs on both devices, float32
// within 1e-5 of the CPU's result (relative to the tensor's largest value), dropout masks
// bit-identical, bf16 products against the CPU's definition (bf16-rounded inputs, float32 sums);
// then the whole model's logits, loss and every gradient, and a few Adam steps.
//
// Compiled in every build; where the build has no CUDA backend or the machine no GPU, each test is
// skipped with a message, or fails when TFM_REQUIRE_GPU=1 (the GPU machine's check, scripts/gpu-check.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "core/device.h"
#include "decode/search.h"
#include "decode/shortlist.h"
#include "dist/communicator.h"
#include "dist/device_communicator.h"
#include "model/transformer.h"
#include "transformer/translator.h"
#include "ops/adam.h"
#include "ops/attention.h"
#include "ops/copy.h"
#include "ops/cuda/kernels.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/gated.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/packed.h"
#include "ops/positional.h"
#include "ops/rms_norm.h"
#include "ops/rotary.h"
#include "ops/softmax.h"
#include "ops/top_k.h"
#include "testing/decoding.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

#define REQUIRE_GPU()                                                                                   \
  do {                                                                                                  \
    if (cuda::kernels() == nullptr) {                                                                   \
      const char* require = std::getenv("TFM_REQUIRE_GPU");                                             \
      if (require != nullptr && std::strcmp(require, "1") == 0)                                         \
        FAIL() << "TFM_REQUIRE_GPU=1, but " << builtin_device_absence(Device::CUDA);                      \
      GTEST_SKIP() << builtin_device_absence(Device::CUDA);                                             \
    }                                                                                                   \
  } while (false)

constexpr Device kGpu = Device::CUDA;

Tensor random(Shape shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return testing::random_tensor(std::move(shape), seed, lo, hi).to(DType::F32);
}
Tensor on_gpu(const Tensor& t) { return t.to_device(kGpu); }

// max |cpu − gpu| ≤ tol · max(max |cpu|, floor), reported with the worst element. Returns that
// error over max(max |cpu|, floor).
double expect_close(const Tensor& cpu, const Tensor& gpu, const std::string& what, double tol = 1e-5,
                    double floor = 1e-30) {
  EXPECT_EQ(cpu.shape(), gpu.shape()) << what;
  if (cpu.shape() != gpu.shape()) return INFINITY;
  const std::vector<double> a = cpu.to_doubles(), b = gpu.to_doubles();
  double largest = floor, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    largest = std::max(largest, std::abs(a[i]));
    const double e = std::abs(a[i] - b[i]);
    if (!(e <= worst)) {  // NaN counts as worst
      worst = e;
      at = i;
    }
  }
  EXPECT_LE(worst, tol * largest) << what << ": element " << at << " is " << (a.empty() ? 0 : a[at]) << " on the cpu, "
                                  << (b.empty() ? 0 : b[at]) << " on cuda (largest |value| " << largest << ")";
  return worst / largest;
}

void expect_identical(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  const Tensor back = gpu.to_device(Device::CPU);
  EXPECT_EQ(std::memcmp(cpu.raw(), back.raw(), cpu.bytes()), 0) << what << ": not bit-identical";
}

TEST(Cuda, ElementwiseOps) {
  REQUIRE_GPU();
  const Shape shape{37, 53};
  const Tensor a = random(shape, 1), b = random(shape, 2), bias = random({53}, 3);
  auto both = [&](const char* what, auto op, std::initializer_list<Tensor> inputs, const Tensor& init) {
    std::vector<Tensor> host(inputs), dev;
    for (const Tensor& t : host) dev.push_back(on_gpu(t));
    const Tensor y_cpu = init.clone(), y_gpu = on_gpu(init);
    op(host, y_cpu);
    op(dev, y_gpu);
    expect_close(y_cpu, y_gpu, what);
  };
  const Tensor zero = Tensor::zeros(shape), start = random(shape, 4);
  both("add", [](auto& in, const Tensor& y) { ops::add(in[0], in[1], y); }, {a, b}, zero);
  both("add_to", [](auto& in, const Tensor& y) { ops::add_to(in[0], y); }, {a}, start);
  both("scale", [](auto& in, const Tensor& y) { ops::scale(in[0], -0.37, y); }, {a}, zero);
  both("bias_add", [](auto& in, const Tensor& y) { ops::bias_add(in[0], in[1], y); }, {a, bias}, zero);
  for (const ops::Activation act : {ops::Activation::kNone, ops::Activation::kRelu, ops::Activation::kGelu})
    both("bias_activate", [act](auto& in, const Tensor& y) { ops::bias_activate(in[0], in[1], act, y); }, {a, bias},
         zero);
  both("relu", [](auto& in, const Tensor& y) { ops::relu(in[0], y); }, {a}, zero);
  both("relu_backward", [](auto& in, const Tensor& y) { ops::relu_backward(in[0], in[1], y); }, {a, b}, start);
  for (const ops::Activation act : {ops::Activation::kNone, ops::Activation::kRelu, ops::Activation::kSwish,
                                    ops::Activation::kGelu, ops::Activation::kGeluSigmoid,
                                    ops::Activation::kGeluTanh}) {
    const Tensor x = random(shape, 5, -6, 6);
    both(ops::activation_name(act), [act](auto& in, const Tensor& y) { ops::activate(act, in[0], y); }, {x}, zero);
    both(ops::activation_name(act), [act](auto& in, const Tensor& y) { ops::activation_backward(act, in[0], in[1], y); },
         {x, b}, start);
  }
  // Column sums over many rows (more than the kernel's row chunks).
  const Tensor dy = random({1000, 70}, 6), dbias = random({70}, 7);
  const Tensor dbias_gpu = on_gpu(dbias);
  ops::bias_add_backward(dy, dbias);
  ops::bias_add_backward(on_gpu(dy), dbias_gpu);
  expect_close(dbias, dbias_gpu, "bias_add_backward");
  const Tensor big = random({100003}, 8);
  EXPECT_NEAR(ops::sum_squares(on_gpu(big)), ops::sum_squares(big), 1e-9 * ops::sum_squares(big));
}

TEST(Cuda, DropoutMasksAreBitIdentical) {
  REQUIRE_GPU();
  for (const int64_t n : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{1001}, int64_t{1} << 18}) {
    const Tensor x = random({n}, 10 + n);
    for (const double p : {0.1, 0.5}) {
      const RngStream rng{1234, 56};
      const Tensor y_cpu = Tensor::empty({n}), y_gpu = Tensor::empty({n}, DType::F32, kGpu);
      ops::dropout(x, p, rng, y_cpu);
      ops::dropout(on_gpu(x), p, rng, y_gpu);
      expect_identical(y_cpu, y_gpu, cat("dropout of ", n, " at ", p));
    }
  }
}

TEST(Cuda, ProductsInFloat32AndBf16) {
  REQUIRE_GPU();
  struct Case {
    Shape a, b, c;
    bool ta, tb;
  };
  const Case cases[] = {
      {{7, 13}, {13, 5}, {7, 5}, false, false},      {{13, 7}, {13, 5}, {7, 5}, true, false},
      {{7, 13}, {5, 13}, {7, 5}, false, true},       {{13, 7}, {5, 13}, {7, 5}, true, true},
      {{3, 4, 6, 9}, {9, 11}, {3, 4, 6, 11}, false, false},  // a weight over leading dims
      {{4, 6, 9}, {4, 11, 9}, {4, 6, 11}, false, true},      // batched
      {{64, 300}, {300, 200}, {64, 200}, false, false},
  };
  uint64_t seed = 20;
  for (const Case& c : cases)
    for (const ops::Precision precision : {ops::Precision::kFloat32, ops::Precision::kBf16}) {
      const Tensor a = random(c.a, ++seed), b = random(c.b, ++seed), c0 = random(c.c, ++seed);
      const ops::MatmulArgs args{c.ta, c.tb, 0.75f, 0.5f, precision};
      const Tensor y_cpu = c0.clone(), y_gpu = on_gpu(c0);
      ops::matmul(a, b, y_cpu, args);
      ops::matmul(on_gpu(a), on_gpu(b), y_gpu, args);
      const std::string what = cat("matmul ", c.a, c.ta ? "ᵀ" : "", " · ", c.b, c.tb ? "ᵀ" : "",
                                   precision == ops::Precision::kBf16 ? " bf16" : " float32");
      expect_close(y_cpu, y_gpu, what);
      // The backward is two products of the same kind.
      const Tensor dc = random(c.c, ++seed);
      const Tensor da = random(c.a, ++seed), db = random(c.b, ++seed);
      const Tensor da_gpu = on_gpu(da), db_gpu = on_gpu(db);
      ops::matmul_backward(a, b, dc, &da, &db, args);
      ops::matmul_backward(on_gpu(a), on_gpu(b), on_gpu(dc), &da_gpu, &db_gpu, args);
      expect_close(da, da_gpu, what + " dA");
      expect_close(db, db_gpu, what + " dB");
    }
  const Tensor x = random({1000}, 30, -1000, 1000), r_cpu = Tensor::empty({1000}), r_gpu = Tensor::empty({1000}, DType::F32, kGpu);
  ops::round_to_bf16(x, r_cpu);
  ops::round_to_bf16(on_gpu(x), r_gpu);
  expect_identical(r_cpu, r_gpu, "round_to_bf16");
}

// A linear layer's products with the bias, the activation and the bias gradient in cuBLASLt's
// epilogue (ReLU and none; Swish has no epilogue and goes through gemm and the bias ops), against
// the CPU's matmul and bias ops, the gradients accumulated onto what was there.
TEST(Cuda, LinearLayersThroughCuBlasLtEpilogues) {
  REQUIRE_GPU();
  struct Case {
    Shape x, w;
  };
  const Case cases[] = {{{3, 5, 64}, {96, 64}}, {{7, 13}, {5, 13}}, {{50, 512}, {2048, 512}}};
  uint64_t seed = 400;
  for (const Case& c : cases)
    for (const ops::Activation act : {ops::Activation::kNone, ops::Activation::kRelu, ops::Activation::kSwish})
      for (const ops::Precision precision : {ops::Precision::kFloat32, ops::Precision::kBf16}) {
        const std::string what = cat("linear ", c.x, " · ", c.w, "ᵀ ", ops::activation_name(act),
                                     precision == ops::Precision::kBf16 ? " bf16" : " float32");
        const int64_t out = c.w[0];
        std::vector<int64_t> y_dims = c.x.to_vector();
        y_dims.back() = out;
        const Shape y_shape(y_dims);
        const Tensor x = random(c.x, ++seed), w = random(c.w, ++seed), bias = random({out}, ++seed);
        const Tensor y_cpu = Tensor::empty(y_shape), y_gpu = Tensor::empty(y_shape, DType::F32, kGpu);
        ops::linear(x, w, bias, act, y_cpu, precision);
        ops::linear(on_gpu(x), on_gpu(w), on_gpu(bias), act, y_gpu, precision);
        expect_close(y_cpu, y_gpu, what);
        if (act == ops::Activation::kNone) {  // a residual as the product's C (beta 1)
          const Tensor r = random(y_shape, ++seed, -4.0, 4.0);
          ops::linear(x, w, bias, act, y_cpu, precision, r);
          const int64_t before = cuda::kernels()->residual_products();
          ops::linear(on_gpu(x), on_gpu(w), on_gpu(bias), act, y_gpu, precision, on_gpu(r));
          expect_close(y_cpu, y_gpu, what + " + residual");
          // The fallback (product, bias, add) gives the same values: that the one call ran is
          // checked where decoding's shapes meet it (a float32 layer of 512 inputs).
          const bool one_call = cuda::kernels()->residual_products() > before;
          std::printf("%s + residual: %s\n", what.c_str(), one_call ? "one cuBLASLt call" : "the fallback");
          if (c.x[1] == 512 && precision == ops::Precision::kFloat32) {
            EXPECT_TRUE(one_call) << what;
          }
        }
        const Tensor dy = random(y_shape, ++seed), dx = random(c.x, ++seed), dw = random(c.w, ++seed),
                     db = random({out}, ++seed);
        const Tensor dx_gpu = on_gpu(dx), dw_gpu = on_gpu(dw), db_gpu = on_gpu(db);
        ops::linear_backward(x, w, dy, &dx, dw, db, precision);
        ops::linear_backward(on_gpu(x), on_gpu(w), on_gpu(dy), &dx_gpu, dw_gpu, db_gpu, precision);
        expect_close(dx, dx_gpu, what + " dx");
        expect_close(dw, dw_gpu, what + " dw");
        expect_close(db, db_gpu, what + " dbias");
      }
}

// Inference's packed weights on a GPU (ops/packed.h): in bf16 the weight rounded once into a copy of
// its own, only x rounded at each product; in float32 the weight's own product. Either with the bias
// and activation the weight was packed with, against the CPU's definition (ops::linear, or matmul
// then the activation without a bias), also once the float32 weight is gone (kRelease).
TEST(Cuda, PackedWeightsAsTheirDefinition) {
  REQUIRE_GPU();
  struct Case {
    int64_t rows, in, out;
  };
  const Case cases[] = {{1, 64, 96}, {7, 13, 5}, {128, 512, 2048}, {300, 512, 1000}};
  uint64_t seed = 700;
  for (const Case& c : cases)
    for (const ops::Activation act : {ops::Activation::kNone, ops::Activation::kRelu, ops::Activation::kSwish})
      for (const bool with_bias : {true, false})
        for (const ops::Precision precision : {ops::Precision::kFloat32, ops::Precision::kBf16}) {
          const bool bf16 = precision == ops::Precision::kBf16;
          const std::string what = cat("packed [", c.rows, ", ", c.in, "] · [", c.out, ", ", c.in, "]ᵀ ",
                                       ops::activation_name(act), with_bias ? " with bias" : "", bf16 ? " bf16" : " float32");
          const Tensor x = random({c.rows, c.in}, ++seed), w = random({c.out, c.in}, ++seed),
                       bias = random({c.out}, ++seed);
          const Tensor y_cpu = Tensor::empty({c.rows, c.out});
          if (with_bias) {
            ops::linear(x, w, bias, act, y_cpu, precision);
          } else {
            ops::matmul(x, w, y_cpu, {.trans_b = true, .precision = precision});
            ops::activate(act, y_cpu, y_cpu);
          }
          const Tensor w_gpu = on_gpu(w), bias_gpu = on_gpu(bias);
          ops::PackedMatrix p = ops::pack_weight(w_gpu, with_bias ? bias_gpu : Tensor(), act, precision);
          EXPECT_EQ(p.packed != nullptr, bf16) << what << ": a bf16 copy in bf16 only";
          if (bf16) p.weight = Tensor();  // every product takes the bf16 copy
          const Tensor y_gpu = Tensor::empty({c.rows, c.out}, DType::F32, kGpu);
          ops::matmul_packed(on_gpu(x), p, y_gpu);
          expect_close(y_cpu, y_gpu, what);
          if (act == ops::Activation::kNone) {  // a residual: the product's C with a bias, added after without
            const Tensor r = random({c.rows, c.out}, ++seed, -4.0, 4.0);
            ops::add(r, y_cpu, y_cpu);
            const int64_t before = cuda::kernels()->residual_products();
            ops::matmul_packed(on_gpu(x), p, y_gpu, on_gpu(r));
            expect_close(y_cpu, y_gpu, what + " + residual");
            const bool one_call = cuda::kernels()->residual_products() > before;
            std::printf("%s + residual: %s\n", what.c_str(), one_call ? "one cuBLASLt call" : "the fallback");
            if (bf16 && with_bias && c.in == 512) {
              EXPECT_TRUE(one_call) << what;
            }
          }
        }
  EXPECT_TRUE(ops::packs_bf16(kGpu));
  // A CPU x with a packed GPU weight is refused, naming both devices.
  const ops::PackedMatrix p = ops::pack_weight(on_gpu(random({4, 8}, 1)), Tensor(), ops::Activation::kNone,
                                               ops::Precision::kBf16);
  EXPECT_THROW(ops::matmul_packed(random({2, 8}, 2), p, Tensor::empty({2, 4})), Error);
}

struct AttentionCase {
  const char* name;
  int64_t B, T, S, H, d;
  bool causal, lengths;
  double dropout;
  int64_t kv_group = 1;
  int kv_heads = 0;  // key/value heads (0: H)
  int64_t window = 0;
};

// ops::attention (and its backward, without kv_group) of one case on the CPU and the GPU, compared.
void compare_attention(const AttentionCase& c, uint64_t& seed) {
  const int64_t kvB = c.B / c.kv_group, KV = c.kv_heads == 0 ? c.H : c.kv_heads;
  const Tensor q = random({c.B, c.T, c.H * c.d}, ++seed), k = random({kvB, c.S, KV * c.d}, ++seed),
               v = random({kvB, c.S, KV * c.d}, ++seed);
  ops::AttentionArgs args;
  args.heads = static_cast<int>(c.H);
  args.kv_heads = c.kv_heads;
  args.window = c.window;
  args.causal = c.causal;
  args.kv_group = c.kv_group;
  args.dropout = c.dropout;
  args.rng = RngStream{77, 5};
  if (c.lengths) {
    std::vector<int32_t> lengths;
    for (int64_t b = 0; b < c.B; ++b) lengths.push_back(static_cast<int32_t>(std::max<int64_t>(1, c.S - (b * 3) % c.S)));
    lengths[0] = static_cast<int32_t>(c.S);
    args.key_lengths = Tensor::from<int32_t>({c.B}, lengths);
  }
  ops::AttentionArgs gpu_args = args;
  if (c.lengths) gpu_args.key_lengths = on_gpu(args.key_lengths);
  const Tensor probs = Tensor::empty({c.B, c.H, c.T, c.S}), out = Tensor::empty({c.B, c.T, c.H * c.d});
  const Tensor probs_gpu = Tensor::empty(probs.shape(), DType::F32, kGpu), out_gpu = Tensor::empty(out.shape(), DType::F32, kGpu);
  const Tensor q_gpu = on_gpu(q), k_gpu = on_gpu(k), v_gpu = on_gpu(v);
  ops::attention(q, k, v, args, probs, out);
  ops::attention(q_gpu, k_gpu, v_gpu, gpu_args, probs_gpu, out_gpu);
  expect_close(probs, probs_gpu, cat(c.name, ": probs"));
  expect_close(out, out_gpu, cat(c.name, ": out"));
  if (c.kv_group != 1) return;  // the backward is for training
  const Tensor dout = random(out.shape(), ++seed);
  const Tensor dq = random(q.shape(), ++seed), dk = random(k.shape(), ++seed), dv = random(v.shape(), ++seed);
  const Tensor dq_gpu = on_gpu(dq), dk_gpu = on_gpu(dk), dv_gpu = on_gpu(dv);
  ops::attention_backward(q, k, v, args, probs, dout, dq, dk, dv);
  ops::attention_backward(q_gpu, k_gpu, v_gpu, gpu_args, probs_gpu, on_gpu(dout), dq_gpu, dk_gpu, dv_gpu);
  expect_close(dq, dq_gpu, cat(c.name, ": dq"));
  expect_close(dk, dk_gpu, cat(c.name, ": dk"));
  expect_close(dv, dv_gpu, cat(c.name, ": dv"));
}

TEST(Cuda, AttentionForwardAndBackward) {
  REQUIRE_GPU();
  const AttentionCase cases[] = {
      {"plain", 3, 5, 7, 2, 4, false, false, 0.0},
      {"padded", 3, 5, 7, 2, 4, false, true, 0.0},
      {"causal padded", 4, 9, 9, 4, 8, true, true, 0.0},
      {"dropout", 3, 6, 10, 2, 8, false, true, 0.2},
      {"causal dropout", 2, 12, 12, 8, 16, true, true, 0.1},
      {"beams share keys", 6, 1, 9, 2, 4, false, true, 0.0, 3},
      {"causal, fewer queries than keys", 3, 4, 9, 2, 8, true, true, 0.0},
      // A head width that is not a multiple of 4: the fused kernels' plain reads.
      {"odd head width, dropout", 3, 7, 11, 2, 6, true, true, 0.1},
      {"fused forward and backward, base shape", 4, 50, 50, 8, 64, false, true, 0.1},
      // The fused forward and the products path's backward (d_k 64, 100 tokens: the common shape of
      // longer training sentences).
      {"fused forward, products backward", 2, 100, 100, 2, 64, true, true, 0.1},
      // Too large for the fused kernels' shared memory: the products path.
      {"long, causal, dropout (products path)", 2, 300, 600, 2, 64, true, true, 0.1},
      {"beams share long keys (products path)", 4, 1, 600, 2, 64, false, true, 0.0, 2},
  };
  uint64_t seed = 100;
  for (const AttentionCase& c : cases) compare_attention(c, seed);
}

// Grouped-query heads (kv_heads) and sliding windows on every path: the fused kernels (the
// backward's blocks taking a key/value head's query heads in turn), the products, beams sharing keys.
TEST(Cuda, GroupedQueryAttentionAndWindows) {
  REQUIRE_GPU();
  const AttentionCase cases[] = {
      {"grouped heads", 3, 5, 7, 4, 4, false, true, 0.0, 1, 2},
      {"multi-query, causal, dropout", 2, 12, 12, 8, 16, true, true, 0.1, 1, 1},
      {"grouped, odd head width", 3, 7, 11, 4, 6, true, true, 0.1, 1, 2},
      {"grouped, fused base shape", 4, 50, 50, 8, 64, true, true, 0.1, 1, 2},
      {"grouped, long (products path)", 2, 300, 600, 4, 64, true, true, 0.1, 1, 2},
      {"grouped beams share keys", 6, 1, 9, 4, 4, false, true, 0.0, 3, 2},
      {"multi-query beams share long keys (products path)", 4, 1, 600, 4, 64, false, true, 0.0, 2, 1},
      {"window, causal, padded", 4, 9, 9, 4, 8, true, true, 0.0, 1, 0, 3},
      {"window, not causal, odd width, dropout", 3, 7, 11, 2, 6, false, true, 0.1, 1, 0, 4},
      {"window, fewer queries than keys", 3, 4, 9, 2, 8, true, true, 0.0, 1, 0, 2},
      {"window, grouped, long (products path)", 2, 300, 600, 4, 64, true, true, 0.1, 1, 2, 50},
      {"window, beams share long keys", 4, 1, 600, 2, 64, true, true, 0.0, 2, 1, 100},
  };
  uint64_t seed = 500;
  for (const AttentionCase& c : cases) compare_attention(c, seed);
}

// A decoding cache's slabs: each entry's keys gathered from rows of [S, R, H·d].
TEST(Cuda, AttentionOverADecodingCache) {
  REQUIRE_GPU();
  const int64_t B = 5, S = 6, R = 8, H = 2, d = 4;
  const Tensor q = random({B, 1, H * d}, 200), k = random({S, R, H * d}, 201), v = random({S, R, H * d}, 202);
  std::vector<int32_t> rows;
  for (int64_t i = 0; i < B * S; ++i) rows.push_back(static_cast<int32_t>((i * 5 + 3) % R));
  ops::AttentionArgs args;
  args.heads = H;
  args.causal = true;
  args.key_rows = Tensor::from<int32_t>({B, S}, rows);
  args.key_lengths = Tensor::from<int32_t>({B}, {6, 5, 6, 2, 4});
  ops::AttentionArgs gpu_args = args;
  gpu_args.key_rows = on_gpu(args.key_rows);
  gpu_args.key_lengths = on_gpu(args.key_lengths);
  const Tensor probs = Tensor::empty({B, H, 1, S}), out = Tensor::empty({B, 1, H * d});
  const Tensor probs_gpu = Tensor::empty(probs.shape(), DType::F32, kGpu), out_gpu = Tensor::empty(out.shape(), DType::F32, kGpu);
  ops::attention(q, k, v, args, probs, out);
  ops::attention(on_gpu(q), on_gpu(k), on_gpu(v), gpu_args, probs_gpu, out_gpu);
  expect_close(probs, probs_gpu, "cached probs");
  expect_close(out, out_gpu, "cached out");
  // Lengths on the device are not read back to be checked (that would wait for the GPU): beyond S
  // they count as S, below 0 as 0 (no keys: zero probabilities and output), as the CPU's S and 0.
  args.key_lengths = Tensor::from<int32_t>({B}, {6, 0, 6, 2, 0});
  gpu_args.key_lengths = on_gpu(Tensor::from<int32_t>({B}, {S + 3, -1, 6, 2, -7}));
  ops::attention(q, k, v, args, probs, out);
  ops::attention(on_gpu(q), on_gpu(k), on_gpu(v), gpu_args, probs_gpu, out_gpu);
  expect_close(probs, probs_gpu, "cached probs, lengths beyond [0, S]", 1e-5, 1.0);
  expect_close(out, out_gpu, "cached out, lengths beyond [0, S]", 1e-5, 1.0);
}

// A decoding cache's slabs with grouped-query heads and a sliding window.
TEST(Cuda, GroupedAttentionOverADecodingCache) {
  REQUIRE_GPU();
  const int64_t B = 5, S = 9, R = 8, H = 4, d = 8;
  for (const int kv : {1, 2})
    for (const int64_t window : {0, 3}) {
      const std::string what = cat("kv_heads ", kv, ", window ", window);
      const Tensor q = random({B, 1, H * d}, 210 + kv), k = random({S, R, kv * d}, 211), v = random({S, R, kv * d}, 212);
      std::vector<int32_t> rows;
      for (int64_t i = 0; i < B * S; ++i) rows.push_back(static_cast<int32_t>((i * 5 + 3) % R));
      ops::AttentionArgs args;
      args.heads = H;
      args.kv_heads = kv;
      args.window = window;
      args.causal = true;
      args.key_rows = Tensor::from<int32_t>({B, S}, rows);
      args.key_lengths = Tensor::from<int32_t>({B}, {9, 5, 9, 2, 4});
      ops::AttentionArgs gpu_args = args;
      gpu_args.key_rows = on_gpu(args.key_rows);
      gpu_args.key_lengths = on_gpu(args.key_lengths);
      const Tensor probs = Tensor::empty({B, H, 1, S}), out = Tensor::empty({B, 1, H * d});
      const Tensor probs_gpu = Tensor::empty(probs.shape(), DType::F32, kGpu),
                   out_gpu = Tensor::empty(out.shape(), DType::F32, kGpu);
      ops::attention(q, k, v, args, probs, out);
      ops::attention(on_gpu(q), on_gpu(k), on_gpu(v), gpu_args, probs_gpu, out_gpu);
      expect_close(probs, probs_gpu, what + ": cached probs", 1e-5, 1.0);
      expect_close(out, out_gpu, what + ": cached out", 1e-5, 1.0);
    }
}

TEST(Cuda, LayerNormAndSoftmax) {
  REQUIRE_GPU();
  const Tensor x = random({300, 96}, 300, -3, 5), gamma = random({96}, 301), beta = random({96}, 302);
  const Tensor y = Tensor::empty(x.shape()), mean = Tensor::empty({300}), rstd = Tensor::empty({300});
  const Tensor x_gpu = on_gpu(x), gamma_gpu = on_gpu(gamma), beta_gpu = on_gpu(beta);
  const Tensor y_gpu = Tensor::empty(x.shape(), DType::F32, kGpu), mean_gpu = Tensor::empty({300}, DType::F32, kGpu),
               rstd_gpu = Tensor::empty({300}, DType::F32, kGpu);
  ops::layer_norm(x, gamma, beta, 1e-5, y, mean, rstd);
  ops::layer_norm(x_gpu, gamma_gpu, beta_gpu, 1e-5, y_gpu, mean_gpu, rstd_gpu);
  expect_close(y, y_gpu, "layer_norm y");
  expect_close(mean, mean_gpu, "layer_norm mean");
  expect_close(rstd, rstd_gpu, "layer_norm rstd");
  const Tensor dy = random(x.shape(), 303), dx = random(x.shape(), 304), dgamma = random({96}, 305),
               dbeta = random({96}, 306);
  const Tensor dx_gpu = on_gpu(dx), dgamma_gpu = on_gpu(dgamma), dbeta_gpu = on_gpu(dbeta);
  ops::layer_norm_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
  ops::layer_norm_backward(on_gpu(dy), x_gpu, gamma_gpu, mean_gpu, rstd_gpu, dx_gpu, dgamma_gpu, dbeta_gpu);
  expect_close(dx, dx_gpu, "layer_norm dx");
  expect_close(dgamma, dgamma_gpu, "layer_norm dgamma");
  expect_close(dbeta, dbeta_gpu, "layer_norm dbeta");

  const Tensor s = Tensor::empty(x.shape()), s_gpu = Tensor::empty(x.shape(), DType::F32, kGpu);
  ops::softmax(x, s);
  ops::softmax(x_gpu, s_gpu);
  expect_close(s, s_gpu, "softmax");
  const Tensor ds_gpu = on_gpu(dx);
  ops::softmax_backward(s, dy, dx);
  ops::softmax_backward(s_gpu, on_gpu(dy), ds_gpu);
  expect_close(dx, ds_gpu, "softmax_backward");
}

// The model family's ops: RMSNorm forward and backward (gradients added onto what was there), rotary
// in both layouts with a partial rotation, offsets on the host and on the device, out of place and in
// place, and gated activations with their backward.
TEST(Cuda, RmsNorm) {
  REQUIRE_GPU();
  const Tensor x = random({300, 96}, 310, -3, 5), gamma = random({96}, 311);
  const Tensor y = Tensor::empty(x.shape()), rstd = Tensor::empty({300});
  const Tensor x_gpu = on_gpu(x), gamma_gpu = on_gpu(gamma), rstd_gpu = Tensor::empty({300}, DType::F32, kGpu);
  const Tensor y_gpu = Tensor::empty(x.shape(), DType::F32, kGpu);
  ops::rms_norm(x, gamma, 1e-5, y, rstd);
  ops::rms_norm(x_gpu, gamma_gpu, 1e-5, y_gpu, rstd_gpu);
  expect_close(y, y_gpu, "rms_norm y");
  expect_close(rstd, rstd_gpu, "rms_norm rstd");
  const Tensor dy = random(x.shape(), 312), dx = random(x.shape(), 313), dgamma = random({96}, 314);
  const Tensor dx_gpu = on_gpu(dx), dgamma_gpu = on_gpu(dgamma);
  ops::rms_norm_backward(dy, x, gamma, rstd, dx, dgamma);
  ops::rms_norm_backward(on_gpu(dy), x_gpu, gamma_gpu, rstd_gpu, dx_gpu, dgamma_gpu);
  expect_close(dx, dx_gpu, "rms_norm dx");
  expect_close(dgamma, dgamma_gpu, "rms_norm dgamma");
}

TEST(Cuda, Rotary) {
  REQUIRE_GPU();
  const Tensor x = random({3, 17, 4 * 24}, 320), offsets = Tensor::from<int32_t>({3}, {0, 9, 70000});
  for (const ops::Rotary rope : {ops::Rotary{24, 10000.0, false}, ops::Rotary{16, 500.0, true}})
    for (const bool inverse : {false, true}) {
      const std::string what = cat("rotary dims ", rope.dims, rope.interleaved ? " interleaved" : " half-split",
                                   inverse ? " inverse" : "");
      const Tensor y = Tensor::empty(x.shape()), y_gpu = Tensor::empty(x.shape(), DType::F32, kGpu);
      ops::rotary(x, 4, rope, 5, offsets, inverse, y);
      ops::rotary(on_gpu(x), 4, rope, 5, offsets, inverse, y_gpu);  // offsets from the host
      expect_close(y, y_gpu, what);
      const Tensor in_place = on_gpu(x);
      ops::rotary(in_place, 4, rope, 5, on_gpu(offsets), inverse, in_place);
      expect_close(y, in_place, what + ", in place, offsets on the device");
      ops::rotary(x, 4, rope, 5, Tensor(), inverse, y);
      ops::rotary(on_gpu(x), 4, rope, 5, Tensor(), inverse, y_gpu);
      expect_close(y, y_gpu, what + ", no offsets");
    }
}

TEST(Cuda, GatedActivations) {
  REQUIRE_GPU();
  const Tensor pre = random({37, 2 * 53}, 330, -6, 6), dh = random({37, 53}, 331);
  for (const ops::Activation act : {ops::Activation::kNone, ops::Activation::kRelu, ops::Activation::kSwish,
                                    ops::Activation::kGelu, ops::Activation::kGeluSigmoid,
                                    ops::Activation::kGeluTanh}) {
    const std::string what = cat("gated ", ops::activation_name(act));
    const Tensor h = Tensor::empty({37, 53}), h_gpu = Tensor::empty({37, 53}, DType::F32, kGpu);
    ops::gated(pre, act, h);
    ops::gated(on_gpu(pre), act, h_gpu);
    expect_close(h, h_gpu, what);
    const Tensor dpre = Tensor::empty(pre.shape()), dpre_gpu = on_gpu(pre);
    ops::gated_backward(dh, pre, act, dpre);
    ops::gated_backward(on_gpu(dh), dpre_gpu, act, dpre_gpu);  // in place
    expect_close(dpre, dpre_gpu, what + " backward");
  }
}

TEST(Cuda, LabelSmoothedCrossEntropy) {
  REQUIRE_GPU();
  const int64_t N = 40, V = 1234;
  const Tensor logits = random({N, V}, 400, -8, 8);
  std::vector<int32_t> y;
  for (int64_t i = 0; i < N; ++i) y.push_back(i % 7 == 3 ? 0 : static_cast<int32_t>((i * 131) % V));
  const Tensor targets = Tensor::from<int32_t>({N}, y);
  const ops::LossArgs args{0.1, 0};
  const Tensor lse = Tensor::empty({N}), lse_gpu = Tensor::empty({N}, DType::F32, kGpu);
  const Tensor logits_gpu = on_gpu(logits), targets_gpu = on_gpu(targets);
  const ops::LossSum cpu = ops::cross_entropy(logits, targets, args, lse);
  const ops::LossSum gpu = ops::cross_entropy(logits_gpu, targets_gpu, args, lse_gpu);
  EXPECT_EQ(gpu.tokens, cpu.tokens);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * std::abs(cpu.loss));
  expect_close(lse, lse_gpu, "lse");
  const Tensor d = random({N, V}, 401), d_gpu = on_gpu(d);
  ops::cross_entropy_backward(logits, targets, lse, args, 0.25, d);
  ops::cross_entropy_backward(logits_gpu, targets_gpu, lse_gpu, args, 0.25, d_gpu);
  expect_close(d, d_gpu, "cross_entropy_backward");
  const Tensor in_place = logits.clone(), in_place_gpu = on_gpu(logits);
  ops::cross_entropy_backward_in_place(in_place, targets, lse, args, 0.25);
  ops::cross_entropy_backward_in_place(in_place_gpu, targets_gpu, lse_gpu, args, 0.25);
  expect_close(in_place, in_place_gpu, "cross_entropy_backward_in_place");
}

TEST(Cuda, EmbeddingPositionsAndAdam) {
  REQUIRE_GPU();
  const Tensor table = random({50, 24}, 500);
  const Tensor ids = Tensor::from<int32_t>({3, 4}, {3, 7, 3, -1, 49, 0, 7, 7, 3, 12, -1, 0});
  const Tensor out = Tensor::empty({3, 4, 24}), out_gpu = Tensor::empty({3, 4, 24}, DType::F32, kGpu);
  ops::embedding(ids, table, 4.899, out);
  ops::embedding(on_gpu(ids), on_gpu(table), 4.899, out_gpu);
  expect_close(out, out_gpu, "embedding");
  const Tensor dout = random(out.shape(), 501), dtable = random(table.shape(), 502), dtable_gpu = on_gpu(dtable);
  ops::embedding_backward(ids, dout, 4.899, dtable);
  ops::embedding_backward(on_gpu(ids), on_gpu(dout), 4.899, dtable_gpu);
  expect_close(dtable, dtable_gpu, "embedding_backward");

  ops::PositionEncoding marian{ops::PositionEncoding::Layout::kSinCos, ops::PositionEncoding::Rates::kMarian, 2};
  for (const ops::PositionEncoding& e : {ops::PositionEncoding{}, marian}) {
    const Tensor x = random({3, 9, 24}, 503), x_gpu = on_gpu(x);
    ops::add_positional_encoding(x, 4, e);
    ops::add_positional_encoding(x_gpu, 4, e);
    expect_close(x, x_gpu, "add_positional_encoding");
  }

  const int64_t n = 10007;
  const Tensor p = random({n}, 504), m = random({n}, 505, 0, 0.1), v = random({n}, 506, 0, 0.01);
  const Tensor p_gpu = on_gpu(p), m_gpu = on_gpu(m), v_gpu = on_gpu(v);
  for (int64_t step = 1; step <= 3; ++step) {
    const Tensor g = random({n}, 510 + step);
    const ops::AdamArgs args{7e-4, 0.9, 0.98, 1e-9, step};
    ops::adam_step(p, g, m, v, args);
    ops::adam_step(p_gpu, on_gpu(g), m_gpu, v_gpu, args);
  }
  expect_close(p, p_gpu, "adam params");
  expect_close(m, m_gpu, "adam m");
  expect_close(v, v_gpu, "adam v");
}

TEST(Cuda, RowMovesAndTopK) {
  REQUIRE_GPU();
  const Tensor src = random({6, 5, 4}, 600);
  const Tensor idx = Tensor::from<int32_t>({4}, {5, 0, 0, 3});
  for (const int64_t prefix : {int64_t{-1}, int64_t{3}}) {
    const Tensor dst = random({4, 5, 4}, 601), dst_gpu = on_gpu(dst);
    ops::index_select(src, idx, dst, prefix);
    ops::index_select(on_gpu(src), idx, dst_gpu, prefix);  // indices from the host, as decoding's
    expect_identical(dst, dst_gpu, cat("index_select prefix ", prefix));
  }
  const Tensor x = random({7, 3, 10}, 602);
  std::vector<Tensor> parts = {Tensor::empty({7, 3, 2}), Tensor::empty({7, 3, 5}), Tensor::empty({7, 3, 3})};
  std::vector<Tensor> parts_gpu;
  for (const Tensor& t : parts) parts_gpu.push_back(Tensor::empty(t.shape(), DType::F32, kGpu));
  ops::split_columns(x, parts);
  ops::split_columns(on_gpu(x), parts_gpu);
  for (size_t i = 0; i < parts.size(); ++i) expect_identical(parts[i], parts_gpu[i], cat("split_columns part ", i));
  // One kernel for up to 4 bands of whole words (an empty one among them); copies per band for 5
  // bands and for bands of single bytes.
  for (const std::vector<int64_t>& widths :
       {std::vector<int64_t>{4, 0, 6}, std::vector<int64_t>{0, 4, 6}, std::vector<int64_t>{4, 6, 0},
        std::vector<int64_t>{2, 2, 2, 2, 2}, std::vector<int64_t>{1, 6, 3}, std::vector<int64_t>{2, 3, 1, 4},
        std::vector<int64_t>{4, 4, 8, 4}})
    for (const DType dtype : {DType::F32, DType::I8}) {
      const std::string what = cat("split_columns ", widths.size(), " bands ", name(dtype));
      int64_t row = 0;
      for (const int64_t w : widths) row += w;
      const Tensor xt = dtype == DType::F32 ? (row == 10 ? x : random({7, 3, row}, 607)) : Tensor::empty({7, 3, row}, DType::I8);
      if (dtype == DType::I8)
        for (int64_t i = 0; i < xt.numel(); ++i) xt.data<int8_t>()[i] = static_cast<int8_t>(i * 7 % 251 - 125);
      std::vector<Tensor> cpu_parts, gpu_parts;
      for (const int64_t w : widths) {
        cpu_parts.push_back(Tensor::empty({7, 3, w}, dtype));
        gpu_parts.push_back(Tensor::empty({7, 3, w}, dtype, kGpu));
      }
      ops::split_columns(xt, cpu_parts);
      ops::split_columns(on_gpu(xt), gpu_parts);
      for (size_t i = 0; i < widths.size(); ++i) expect_identical(cpu_parts[i], gpu_parts[i], cat(what, " part ", i));
    }
  // Into a decoding cache's slab position (decoding's keys and values): views at an offset, the rest
  // of the slab untouched.
  {
    const Tensor qkv = random({5, 1, 24}, 605), slab = random({3, 6, 8}, 606), slab_gpu = on_gpu(slab);
    auto position = [](const Tensor& t) { return t.view({18, 8}).rows(6, 5).view({5, 1, 8}); };  // position 1
    const Tensor q = Tensor::empty({5, 1, 8}), q_gpu = Tensor::empty({5, 1, 8}, DType::F32, kGpu);
    const Tensor v = Tensor::empty({5, 1, 8}), v_gpu = Tensor::empty({5, 1, 8}, DType::F32, kGpu);
    ops::split_columns(qkv, {q, position(slab), v});
    ops::split_columns(on_gpu(qkv), {q_gpu, position(slab_gpu), v_gpu});
    expect_identical(slab, slab_gpu, "split_columns into a slab position");
    expect_identical(q, q_gpu, "split_columns q beside a slab position");
    expect_identical(v, v_gpu, "split_columns v beside a slab position");
  }
}

// Small copies from the host go through a ring of pinned memory without waiting for the device
// (ops/cuda/memory.cu): each arrives whole, in order with the kernels around it, even when the host
// overwrites its source at once and the ring wraps around while the copies still wait behind other
// work (300 copies of 64 KiB through 8 MiB, queued behind products that take the GPU ~30 ms), so
// that a region written again before its copy ran would show.
TEST(Cuda, SmallUploadsArriveWholeAndInOrder) {
  REQUIRE_GPU();
  const int64_t n = 16384;  // 64 KiB of float32
  const Tensor ones = Tensor::empty({n}, DType::F32, kGpu);
  ones.fill(1.0);
  const Tensor big = Tensor::empty({4096, 4096}, DType::F32, kGpu), product = Tensor::empty({4096, 4096}, DType::F32, kGpu);
  big.fill(0.5);
  for (int i = 0; i < 12; ++i) ops::matmul(big, big, product);  // float32: ~2.7 ms each on an H100
  std::vector<Tensor> uploaded, sums;
  Tensor host = Tensor::empty({n});
  for (int i = 0; i < 300; ++i) {
    host.fill(static_cast<double>(i));
    uploaded.push_back(host.to_device(kGpu));
    host.fill(-1.0);  // the source changes at once: the copy must have taken its bytes
    const Tensor sum = Tensor::empty({n}, DType::F32, kGpu);
    ops::add(uploaded.back(), ones, sum);  // queued after the copy
    sums.push_back(sum);
  }
  for (int i = 0; i < 300; ++i) {
    const std::vector<double> u = uploaded[static_cast<size_t>(i)].to_doubles(),
                              s = sums[static_cast<size_t>(i)].to_doubles();
    ASSERT_EQ(static_cast<int64_t>(u.size()), n);
    int64_t wrong = 0;
    for (int64_t j = 0; j < n; ++j) wrong += u[j] != i || s[j] != i + 1;
    EXPECT_EQ(wrong, 0) << "copy " << i;
  }
}

// The decoding step's selection on the GPU (its own kernel up to k = 16, the host's beyond) against
// the CPU's: the same ids in the same order (ties: the lower id first), banned ids never chosen,
// −1 and −inf where fewer than k columns are allowed; log-probabilities and log Σ exp within 1e-5
// (the GPU sums in double; the CPU in float32 lanes, 1e-6 to 3e-6 off at the avx2 and generic
// levels over 32,000 columns).
TEST(Cuda, TopKSelectsAsTheCpu) {
  REQUIRE_GPU();
  struct Case {
    int64_t rows, V, k;
    std::vector<int32_t> banned;
    bool ties;
  };
  const std::vector<Case> cases = {
      {3, 40, 4, {2}, false},        {130, 32000, 1, {0, 1, 2}, false}, {130, 32000, 8, {0, 1}, false},
      {17, 5000, 16, {}, true},      {9, 300, 2, {3, 7, 11, 299}, true}, {5, 6, 4, {0, 2, 5}, false},
      {4, 1000, 17, {1}, false},     {2, 3, 1, {0, 1, 2}, false},        {64, 4097, 4, {4096}, true},
  };
  uint64_t seed = 605;
  for (const Case& c : cases) {
    SCOPED_TRACE(cat("rows ", c.rows, ", V ", c.V, ", k ", c.k, ", ", c.banned.size(), " banned"));
    Tensor logits = random({c.rows, c.V}, seed++, -5, 5);
    float* z = logits.data<float>();
    if (c.ties)  // few distinct values: ties decide most ranks
      for (int64_t i = 0; i < logits.numel(); ++i) z[i] = std::round(z[i] * 2.0f) / 2.0f;
    if (c.rows > 2) {  // a row of −inf but for two columns, and one of −inf only
      for (int64_t v = 0; v < c.V; ++v) z[v] = v == c.V / 2 || v == c.V - 1 ? 1.0f : -INFINITY;
      for (int64_t v = 0; v < c.V; ++v) z[c.V + v] = -INFINITY;
    }
    const Tensor logp = Tensor::empty({c.rows, c.k}, DType::F64), ids = Tensor::empty({c.rows, c.k}, DType::I32),
                 lse = Tensor::empty({c.rows}, DType::F64);
    const Tensor logp_gpu = Tensor::empty({c.rows, c.k}, DType::F64, kGpu),
                 ids_gpu = Tensor::empty({c.rows, c.k}, DType::I32, kGpu),
                 lse_gpu = Tensor::empty({c.rows}, DType::F64, kGpu);
    ops::top_k_logprobs(logits, c.k, c.banned, logp, ids, lse);
    const Tensor logits_gpu = on_gpu(logits);
    ops::top_k_logprobs(logits_gpu, c.k, c.banned, logp_gpu, ids_gpu, lse_gpu);
    expect_identical(ids, ids_gpu, "top_k ids");
    const std::vector<double> a = logp.to_doubles(), b = logp_gpu.to_doubles();
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i])) {  // a row of −inf only: −inf − (−inf)
        EXPECT_TRUE(std::isnan(b[i])) << "logp element " << i << ": " << b[i];
      } else if (std::isinf(a[i])) {
        EXPECT_EQ(a[i], b[i]) << "logp element " << i;
      } else {
        EXPECT_NEAR(b[i], a[i], 1e-5) << "logp element " << i;
      }
    }
    const std::vector<double> la = lse.to_doubles(), lb = lse_gpu.to_doubles();
    for (size_t r = 0; r < la.size(); ++r) {
      if (std::isinf(la[r])) {
        EXPECT_EQ(la[r], lb[r]) << "lse row " << r;
      } else {
        EXPECT_NEAR(lb[r], la[r], 1e-5) << "lse row " << r;
      }
    }
    const Tensor gpu_ids = ids_gpu.to_device(Device::CPU);
    const int32_t* chosen = gpu_ids.data<int32_t>();
    for (int64_t i = 0; i < gpu_ids.numel(); ++i)
      for (const int32_t b : c.banned) EXPECT_NE(chosen[i], b) << "id element " << i;
    // The GPU's own kernel took every k up to its limit (else the op selected on the host).
    EXPECT_EQ(cuda::kernels()->top_k_logprobs(c.rows, c.V, c.k, logits_gpu.data<float>(), c.banned.data(),
                                              static_cast<int64_t>(c.banned.size()), logp_gpu.data<double>(),
                                              ids_gpu.data<int32_t>(), lse_gpu.data<double>()),
              c.k <= cuda::Kernels::kMaxTopK);
  }
}

// The whole model: logits, loss and every parameter's gradient on the GPU against the CPU, with
// dropout on (the same streams, so the same masks), for both layer-norm placements.
TEST(Cuda, WholeModelForwardAndBackward) {
  REQUIRE_GPU();
  // Without dropout, each sublayer's residual goes into its last product's call (ops::linear's
  // residual) and Residual::backward takes its gradient; with dropout, the sum comes after it.
  for (const auto& [pre_norm, dropout] : {std::pair{false, 0.1}, std::pair{true, 0.1}, std::pair{false, 0.0},
                                          std::pair{true, 0.0}}) {
    ModelConfig c = model_preset("tiny");
    c.vocab_size = 50;
    c.d_model = 32;
    c.heads = 4;
    c.d_ff = 64;
    c.encoder_layers = 2;
    c.decoder_layers = 2;
    c.pre_norm = pre_norm;
    c.dropout = dropout;
    const std::string what = cat(pre_norm ? "pre-norm" : "post-norm", dropout > 0 ? ", dropout" : ", no dropout");
    Transformer model(c);
    model.init_parameters(11);
    const Batch batch = make_batch({{4, 5, 6, 7, 8, 9, 10}, {9, 4}, {10, 5, 7, 30, 31}},
                                   {{5, 6, 7}, {8, 9, 10, 4, 6, 40, 41}, {7}}, c);
    struct Result {
      Tensor logits, grads;
      double loss = 0;
    };
    auto run = [&](const Batch& b) {
      Rng rng(99);
      const Context ctx = model.context(&rng);
      Transformer::Saved saved;
      Result r;
      const Tensor logits = model.forward(ctx, b, &saved);
      r.logits = logits.clone();
      const Tensor flat = logits.view({logits.shape().rows(), c.vocab_size});
      const Tensor targets = b.tgt_out.view({b.tgt_out.numel()});
      const Tensor lse = Tensor::empty({flat.size(0)}, flat.dtype(), flat.device());
      const ops::LossArgs args{0.1, c.pad_id};
      const ops::LossSum sum = ops::cross_entropy(flat, targets, args, lse);
      r.loss = sum.loss;
      ops::cross_entropy_backward_in_place(flat, targets, lse, args, 1.0 / double(sum.tokens));
      model.params().zero_grad();
      model.backward(ctx, b, saved, logits);
      r.grads = model.params().grads().to_device(Device::CPU);
      return r;
    };
    const Result cpu = run(batch);
    model.params().to_device(kGpu);
    const int64_t residuals_before = cuda::kernels()->residual_products();
    const Result gpu = run(to_device(batch, kGpu));
    const int64_t residuals = cuda::kernels()->residual_products() - residuals_before;
    std::printf("%s: %lld products took their residual in the call\n", what.c_str(), static_cast<long long>(residuals));
    EXPECT_EQ(gpu.logits.device(), kGpu);
    // The batch left on the host (as training passes it: each op copies its ids, lengths and
    // targets over): the same kernels on the same values, so the same bits.
    const Result host_batch = run(batch);
    expect_identical(gpu.logits.to_device(Device::CPU), host_batch.logits, "logits from a batch on the host");
    expect_identical(gpu.grads, host_batch.grads, "gradients from a batch on the host");
    EXPECT_EQ(host_batch.loss, gpu.loss);
    expect_close(cpu.logits, gpu.logits, what + " logits");
    EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * std::abs(cpu.loss));
    // Each parameter's gradient relative to its own largest element, or to 1e-3 of the model's
    // largest where a gradient is (mathematically) zero: the keys' biases, which softmax ignores.
    double largest = 0, worst = 0;
    for (double g : cpu.grads.to_doubles()) largest = std::max(largest, std::abs(g));
    for (int id = 0; id < model.params().size(); ++id) {
      const int64_t off = model.params().offset(id), n = model.params().shape(id).numel();
      worst = std::max(worst, expect_close(cpu.grads.view({cpu.grads.numel()}).rows(off, n),
                                           gpu.grads.view({gpu.grads.numel()}).rows(off, n),
                                           cat(what, " gradient of ", model.params().name(id)),
                                           1e-4, 1e-3 * largest));
    }
    std::printf("%s: largest gradient difference %.2e of the parameter's largest\n", what.c_str(), worst);
  }
}

// The committed tiny model translates the same on the GPU as on the CPU: greedy and beam 4, the
// same text and the same scores, and as the committed expected outputs. (TFM_FIXTURE_DIR in the
// environment points at the fixtures where the binary runs elsewhere than it was built.)
TEST(Cuda, TranslatesTheCommittedModelAsTheCpu) {
  REQUIRE_GPU();
  const char* env = std::getenv("TFM_FIXTURE_DIR");
  const std::string dir = std::string(env != nullptr ? env : TFM_FIXTURE_DIR) + "/tiny_model";
  auto lines = [](const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  const std::vector<std::string> input = lines(dir + "/input.en");
  ASSERT_EQ(input.size(), 10u) << "no fixture at " << dir;
  transformer::TranslatorOptions plain;
  plain.weights = transformer::TranslatorOptions::Weights::kPlain;
  transformer::TranslatorOptions gpu = plain;
  gpu.device = "cuda";
  const transformer::Translator on_cpu(dir + "/model.safetensors", plain), on_gpu(dir + "/model.safetensors", gpu);
  for (const auto& [beam, file] : {std::pair<int64_t, const char*>{1, "expected.greedy.de"}, {4, "expected.beam4.de"}}) {
    SCOPED_TRACE(file);
    transformer::TranslateOptions o;
    o.search.beam_size = beam;
    const auto a = on_cpu.translate(input, o), b = on_gpu.translate(input, o);
    const std::vector<std::string> expected = lines(dir + "/" + file);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].hypotheses.empty(), b[i].hypotheses.empty()) << "line " << i + 1;
      if (a[i].hypotheses.empty()) continue;
      EXPECT_EQ(b[i].best().text, a[i].best().text) << "line " << i + 1;
      EXPECT_EQ(b[i].best().text, expected[i]) << "line " << i + 1;
      EXPECT_NEAR(b[i].best().score, a[i].best().score, 1e-4) << "line " << i + 1;
    }
  }
  // The Translator's own ways on a GPU: packed (the default: fused Q, K and V, biases in the
  // epilogues) as the CPU's plain float32; bf16 (the weights rounded to bfloat16 once) as the CPU's
  // bf16, the same definition.
  transformer::TranslatorOptions packed_gpu;
  packed_gpu.device = "cuda";
  transformer::TranslatorOptions bf16_cpu;
  bf16_cpu.weights = transformer::TranslatorOptions::Weights::kBf16;
  transformer::TranslatorOptions bf16_gpu = bf16_cpu;
  bf16_gpu.device = "cuda";
  const transformer::Translator packed_on_gpu(dir + "/model.safetensors", packed_gpu),
      bf16_on_cpu(dir + "/model.safetensors", bf16_cpu), bf16_on_gpu(dir + "/model.safetensors", bf16_gpu);
  for (const int64_t beam : {int64_t{1}, int64_t{4}}) {
    SCOPED_TRACE(cat("beam ", beam, ", packed and bf16 weights"));
    transformer::TranslateOptions o;
    o.search.beam_size = beam;
    const auto a = on_cpu.translate(input, o), b = packed_on_gpu.translate(input, o);
    const auto a16 = bf16_on_cpu.translate(input, o), b16 = bf16_on_gpu.translate(input, o);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a16.size(), b16.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].hypotheses.empty() || a16[i].hypotheses.empty()) continue;
      EXPECT_EQ(b[i].best().text, a[i].best().text) << "packed, line " << i + 1;
      EXPECT_NEAR(b[i].best().score, a[i].best().score, 1e-4) << "packed, line " << i + 1;
      EXPECT_EQ(b16[i].best().text, a16[i].best().text) << "bf16, line " << i + 1;
      EXPECT_NEAR(b16[i].best().score, a16[i].best().score, 1e-4) << "bf16, line " << i + 1;
    }
  }
  std::vector<std::string> sources, targets;
  const std::vector<std::string> greedy = lines(dir + "/expected.greedy.de");
  for (size_t i = 0; i < input.size(); ++i)
    if (!input[i].empty()) {
      sources.push_back(input[i]);
      targets.push_back(greedy[i]);
    }
  const auto cpu_scores = on_cpu.score(sources, targets), gpu_scores = on_gpu.score(sources, targets);
  ASSERT_EQ(cpu_scores.size(), gpu_scores.size());
  for (size_t i = 0; i < cpu_scores.size(); ++i) EXPECT_NEAR(gpu_scores[i].total, cpu_scores[i].total, 1e-4);
  // Scoring in bf16 runs on the packed copies alone (the float32 weights were given back).
  const auto cpu16 = bf16_on_cpu.score(sources, targets), gpu16 = bf16_on_gpu.score(sources, targets);
  ASSERT_EQ(cpu16.size(), gpu16.size());
  for (size_t i = 0; i < cpu16.size(); ++i) EXPECT_NEAR(gpu16[i].total, cpu16[i].total, 1e-4);
}

// A model with an output projection of its own (tie_output false: imported Marian and Hugging Face
// models) on a GPU with its weights packed in bf16 and the float32 ones given back (translate
// --device cuda --bf16): the output projection's float32 weight stays (a shortlist selects its rows
// from it), and greedy and beam 3, with and without a shortlist, give the tokens of the same model
// kept whole on the GPU, and the CPU's plain bf16 products' (the same definition) within 1e-4.
TEST(Cuda, UntiedOutputProjectionWithBf16WeightsAndAShortlist) {
  REQUIRE_GPU();
  ModelConfig c = testing::tiny_decoding_config(13);
  c.tie_output = false;
  Transformer cpu(c), kept(c), released(c);
  for (Transformer* m : {&cpu, &kept, &released}) m->init_parameters(7);
  ASSERT_NE(cpu.output_weight, cpu.tgt_embedding);
  cpu.set_inference_products(ops::Precision::kBf16);
  using P = Transformer::PlainWeights;
  for (auto& [model, plain] : {std::pair{&kept, P::kKeep}, std::pair{&released, P::kRelease}}) {
    model->params().to_device(kGpu, /*gradients=*/false);
    model->pack_weights(plain, ops::Precision::kBf16);
  }
  EXPECT_FALSE(released.params().released(released.output_weight));
  const Shortlist shortlist = Shortlist::build({{4}}, {{4, 6, 9, 11}}, 13, {.per_source = 0, .frequent = 4}, "");
  const std::vector<std::vector<int32_t>> src = {{4, 5, 6, 7}, {8, 9}, {10, 4, 11, 5, 12, 6}, {7}};
  for (const int64_t beam : {int64_t{1}, int64_t{3}})
    for (const Shortlist* listed : {static_cast<const Shortlist*>(nullptr), &shortlist}) {
      SCOPED_TRACE(cat("beam ", beam, listed != nullptr ? ", shortlist" : ""));
      SearchOptions o;
      o.beam_size = beam;
      const auto a = beam_search(cpu, src, o, listed), b = beam_search(kept, src, o, listed),
                 r = beam_search(released, src, o, listed);
      ASSERT_EQ(a.size(), src.size());
      ASSERT_EQ(b.size(), src.size());
      ASSERT_EQ(r.size(), src.size());
      for (size_t i = 0; i < src.size(); ++i) {
        ASSERT_FALSE(a[i].empty() || b[i].empty() || r[i].empty()) << "sentence " << i;
        EXPECT_EQ(r[i][0].tokens, b[i][0].tokens) << "sentence " << i << ": released against kept";
        EXPECT_EQ(r[i][0].score, b[i][0].score) << "sentence " << i << ": released against kept";
        EXPECT_EQ(r[i][0].tokens, a[i][0].tokens) << "sentence " << i << ": GPU against CPU";
        EXPECT_NEAR(r[i][0].score, a[i][0].score, 1e-4) << "sentence " << i << ": GPU against CPU";
        if (listed == nullptr) continue;
        for (int32_t id : r[i][0].tokens) {
          EXPECT_TRUE(id == 4 || id == 6 || id == 9 || id == 11) << id;
        }
      }
    }
}

// NCCL (several GPUs) with the one rank a machine with one GPU can run: its send and
// receive calls move every slice to its place and back (a wrong offset or count would garble the
// buffer), for float32 and float64, a whole buffer and a range inside one. Where the build has no
// NCCL, dist::nccl() refuses with an error that says so.
TEST(Cuda, NcclOneRankRunsTheTreeAllReduce) {
  REQUIRE_GPU();
  if (dist::device_engine().empty()) {
    EXPECT_THROW(
        {
          try {
            dist::nccl(dist::single_process());
          } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("needs NCCL"), std::string::npos) << e.what();
            throw;
          }
        },
        Error);
    GTEST_SKIP() << "this build has no NCCL";
  }
  select_device(kGpu, 0);  // what a rank does first; 0 is also the default
  EXPECT_THROW(select_device(kGpu, device_count(kGpu)), Error);
  const std::unique_ptr<dist::DeviceCommunicator> comm = dist::nccl(dist::single_process());
  EXPECT_NE(comm->backend().find("NCCL 2."), std::string::npos) << comm->backend();
  for (const DType dtype : {DType::F32, DType::F64}) {
    SCOPED_TRACE(name(dtype));
    const Tensor cpu = testing::random_tensor({1, 10007}, 21, -1, 1).to(dtype);
    const Tensor gpu = cpu.to_device(kGpu);
    comm->all_reduce_tree(gpu, 1);
    const Tensor flat = gpu.view({10007});
    comm->all_reduce_tree(flat.rows(123, 4567), 1);
    EXPECT_EQ(std::memcmp(gpu.to_device(Device::CPU).raw(), cpu.raw(), 10007 * size_of(dtype)), 0);
  }
  EXPECT_THROW(comm->all_reduce_tree(testing::random_tensor({4}, 1, -1, 1).to(DType::F32), 1), Error);  // on the CPU
  EXPECT_THROW(comm->all_reduce_tree(on_gpu(random({4}, 1)), 2), Error);  // 2 contributors of 1 rank
}

}  // namespace
}  // namespace tfm
