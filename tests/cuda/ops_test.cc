// The ops on the GPU against the CPU: elementwise ops and activations, dropout, products in
// float32 and bf16, linear layers, packed weights, layer norm, softmax, RMSNorm, rotary, gated
// activations, the loss, embeddings, positions and Adam.
#include "cuda/common.h"

#include <cstdio>
#include <string>
#include <vector>

#include "ops/adam.h"
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

namespace tfm {
namespace {

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
  // bf16 training's form, written in bfloat16: the CPU's within a bfloat16 rounding (2^-8 relative)
  // of each tensor's largest value, plus the float32 difference above.
  const Tensor d16 = Tensor::empty(logits.shape(), DType::BF16);
  const Tensor d16_gpu = Tensor::empty(logits.shape(), DType::BF16, kGpu);
  ops::cross_entropy_backward_bf16(logits, targets, lse, args, 0.25, d16);
  ops::cross_entropy_backward_bf16(logits_gpu, targets_gpu, lse_gpu, args, 0.25, d16_gpu);
  expect_close(d16.to(DType::F32), d16_gpu.to_device(Device::CPU).to(DType::F32), "cross_entropy_backward_bf16",
               std::ldexp(1.0, -8) + 1e-5);
  // bf16 activations and weights as the products' inputs: the CPU's bf16 product of the same values.
  const Tensor x = random(Shape{33, 40}, 91), w = random(Shape{24, 40}, 92), bias = random(Shape{24}, 93);
  const Tensor out = Tensor::empty({33, 24}), out_gpu = Tensor::empty({33, 24}, DType::F32, kGpu);
  ops::linear(ops::to_bf16(x), ops::to_bf16(w), bias, ops::Activation::kRelu, out, ops::Precision::kBf16);
  ops::linear(ops::to_bf16(on_gpu(x)), ops::to_bf16(on_gpu(w)), on_gpu(bias), ops::Activation::kRelu, out_gpu,
              ops::Precision::kBf16);
  expect_close(out, out_gpu, "linear on bfloat16 tensors");
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

}  // namespace
}  // namespace tfm
