// int8 inference: per-channel weight quantization, the integer matrix product against float32 and
// against its definition (at every level: 7-bit activations without VNNI, 8-bit with it), and a
// quantized model's outputs against the float32 model's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "decode/search.h"
#include "model/checkpoint.h"
#include "ops/cpu/kernels.h"
#include "ops/int8.h"
#include "ops/matmul.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

TEST(Int8, QuantizedRowsReconstructWithinHalfAStep) {
  const Tensor w = testing::random_tensor({37, 53}, 1, -2, 2).to(DType::F32);
  const ops::QuantizedMatrix q = ops::quantize_rows(w);
  for (int64_t r = 0; r < 37; ++r) {
    const float s = q.scale.data<float>()[r];
    for (int64_t c = 0; c < 53; ++c) {
      const float x = w.data<float>()[r * 53 + c], back = q.q.data<int8_t>()[r * 53 + c] * s;
      EXPECT_LE(std::abs(x - back), 0.5f * s + 1e-6f) << r << "," << c;
    }
  }
}

TEST(Int8, ProductMatchesFloat32WithinQuantizationError) {
  const Tensor x = testing::random_tensor({19, 200}, 2).to(DType::F32);
  const Tensor w = testing::random_tensor({45, 200}, 3).to(DType::F32);
  Tensor exact = Tensor::zeros({19, 45}), approx = Tensor::zeros({19, 45});
  ops::matmul(x, w, exact, {.trans_b = true});
  ops::matmul_int8(x, ops::quantize_rows(w), approx);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < exact.numel(); ++i) {
    const double d = exact.data<float>()[i] - approx.data<float>()[i];
    err += d * d;
    norm += double(exact.data<float>()[i]) * exact.data<float>()[i];
  }
  // 8-bit inputs on both sides: about 1% relative error in a product of 200 terms (7-bit activations
  // on CPUs without VNNI: about 1.5%).
  EXPECT_LT(std::sqrt(err / norm), 0.02);
  EXPECT_GT(std::sqrt(err / norm), 0.0) << "suspiciously exact: is the int8 path used?";
}

TEST(Int8, BiasIsAddedInTheSamePass) {
  const Tensor x = testing::random_tensor({7, 64}, 4).to(DType::F32);
  const ops::QuantizedMatrix w = ops::quantize_rows(testing::random_tensor({33, 64}, 5).to(DType::F32));
  const Tensor bias = testing::random_tensor({33}, 6).to(DType::F32);
  Tensor plain = Tensor::zeros({7, 33}), with_bias = Tensor::zeros({7, 33});
  ops::matmul_int8(x, w, plain);
  ops::matmul_int8(x, w, with_bias, bias);
  for (int64_t r = 0; r < 7; ++r)
    for (int64_t c = 0; c < 33; ++c)
      EXPECT_NEAR(with_bias.data<float>()[r * 33 + c], plain.data<float>()[r * 33 + c] + bias.data<float>()[c], 1e-5f)
          << r << "," << c;
  Tensor wrong = Tensor::zeros({7, 33});
  EXPECT_THROW(ops::matmul_int8(x, w, wrong, Tensor::zeros({32})), Error);
}

// A feed-forward layer's first product takes its ReLU in the dequantization pass: max(0, ·) of the
// product with the bias, on both paths (7 rows: column blocks; 300: one product): never negative,
// and max(0, plain) up to a few float32 ulps, since the two variants may contract their
// multiply-adds differently (an ASan build did: 1 ulp; a product within an ulp of 0 may land on
// either side of it).
TEST(Int8, ReluIsTakenInTheSamePass) {
  const ops::QuantizedMatrix w = ops::quantize_rows(testing::random_tensor({33, 64}, 5).to(DType::F32));
  const Tensor bias = testing::random_tensor({33}, 6).to(DType::F32);
  for (int64_t rows : {7, 300}) {
    SCOPED_TRACE(::testing::Message() << rows << " rows");
    const Tensor x = testing::random_tensor({rows, 64}, 4 + rows).to(DType::F32);
    Tensor plain = Tensor::zeros({rows, 33}), fused = Tensor::zeros({rows, 33});
    ops::matmul_int8(x, w, plain, bias);
    ops::matmul_int8(x, w, fused, bias, ops::Activation::kRelu);
    int64_t negative = 0;
    for (int64_t i = 0; i < rows * 33; ++i) {
      const float p = plain.data<float>()[i], f = fused.data<float>()[i];
      negative += p < 0;
      ASSERT_GE(f, 0.0f) << i;
      ASSERT_NEAR(f, std::max(p, 0.0f), 4 * std::numeric_limits<float>::epsilon() * (std::abs(p) + 1)) << i;
    }
    EXPECT_GT(negative, rows * 33 / 4);  // the ReLU had something to do
  }
}

// y = x · ŵᵀ (+ bias) by the definition: each row of x quantized (round half away from zero,
// scale max |x_row| / L with L = ops::int8_activation_levels()), the integer dot products in 64
// bits, both scales and the bias; compared with y for rows [0, m).
void expect_definition(const Tensor& x, const ops::QuantizedMatrix& w, const Tensor& bias, const Tensor& y,
                       int64_t m) {
  const int64_t k = x.size(1), n = w.q.size(0);
  const float levels = static_cast<float>(ops::int8_activation_levels());
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x.data<float>() + r * k;
    float max = 0;
    for (int64_t c = 0; c < k; ++c) max = std::max(max, std::abs(row[c]));
    const float s = max / levels;
    std::vector<int32_t> qx(k);
    for (int64_t c = 0; c < k; ++c) qx[c] = static_cast<int32_t>(std::round(row[c] * (1.0f / s)));
    for (int64_t j = 0; j < n; ++j) {
      int64_t dot = 0;
      for (int64_t c = 0; c < k; ++c) dot += qx[c] * w.q.data<int8_t>()[j * k + c];
      const double want = double(dot) * s * w.scale.data<float>()[j] + (bias.defined() ? bias.data<float>()[j] : 0);
      ASSERT_NEAR(y.data<float>()[r * n + j], want, 1e-5 * (1 + std::abs(want))) << m << " rows: " << r << "," << j;
    }
  }
}

// Through oneDNN (panels dropped) 300 rows take the one-product path, 150 rows the per-thread
// column blocks (3,001 columns: with 2 threads four blocks, the last one shorter); with the
// project's panels, where they serve, both row counts take the blocks.
TEST(Int8, BothProductPathsMatchTheDefinition) {
  const int64_t k = 64, n = 3001;
  const Tensor x = testing::random_tensor({300, k}, 7, -3, 3).to(DType::F32);
  const ops::QuantizedMatrix packed = ops::quantize_rows(testing::random_tensor({n, k}, 8).to(DType::F32));
  ops::QuantizedMatrix plain = packed;
  plain.panels = nullptr;
  const Tensor bias = testing::random_tensor({n}, 9).to(DType::F32);
  for (const ops::QuantizedMatrix* w : {static_cast<const ops::QuantizedMatrix*>(&plain), &packed})
    for (const int64_t m : {300, 150}) {
      Tensor y = Tensor::zeros({m, n});
      ops::matmul_int8(x.rows(0, m), *w, y, bias);
      expect_definition(x, *w, bias, y, m);
    }
}

// The worst case for 16-bit pair sums: every activation at ±max and every weight at ±127 with the
// same sign pattern, so that each product is as large as it can be and all add up. With 8-bit
// activations on a CPU without VNNI, each pair would reach 2 · 255 · 127 = 64,770 and saturate at
// 32,767; the product must still match its definition on every level (the int8_activation_levels
// rule), for both paths.
TEST(Int8, LargestProductsDoNotSaturate) {
  const int64_t k = 256, n = 48;
  for (const int64_t m : {8, 300}) {
    SCOPED_TRACE(::testing::Message() << m << " rows");
    Tensor x = Tensor::empty({m, k}), w = Tensor::empty({n, k});
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c) x.data<float>()[r * k + c] = ((c + r) % 3 == 0 ? -2.5f : 2.5f);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t c = 0; c < k; ++c) w.data<float>()[j * k + c] = ((c + j) % 3 == 0 ? -0.75f : 0.75f);
    const ops::QuantizedMatrix q = ops::quantize_rows(w);
    Tensor y = Tensor::zeros({m, n});
    ops::matmul_int8(x, q, y);
    expect_definition(x, q, Tensor(), y, m);
    // Where the sign patterns line up (row r, column j with r ≡ j mod 3), every term is 2.5 · 0.75.
    EXPECT_NEAR(y.data<float>()[0], k * 2.5 * 0.75, 1e-3 * k);
  }
}

// The project's own int8 kernel (ops/cpu/simd/int8_panels.cc) against the integer sums by their
// definition, in 64 bits, on this level's build (the generic build's scalar loop at the generic
// level): rows that fill the 6-row tiles and leave each remainder, columns past a whole panel,
// column ranges starting inside the matrix, and depths across the kernel's blocks of 1,024.
TEST(Int8, PanelKernelGivesTheExactIntegerSums) {
  for (const int64_t k : {4, 12, 64, 1028, 2052}) {
    for (const int64_t n : {1, 16, 37}) {
      SCOPED_TRACE(::testing::Message() << "k " << k << ", n " << n);
      std::vector<int8_t> w(static_cast<size_t>(n * k));
      uint32_t s = 12345u + static_cast<uint32_t>(k * 131 + n);
      auto next = [&s] { return s = s * 1664525u + 1013904223u, s >> 24; };
      for (int8_t& v : w) v = static_cast<int8_t>(static_cast<int32_t>(next() % 255) - 127);  // [-127, 127]
      w[0] = 127, w[static_cast<size_t>(n * k - 1)] = -127;
      constexpr int32_t kOffset = 64;  // 7-bit activations: bytes in [1, 127]
      std::vector<char> storage(static_cast<size_t>(cpu::int8_panel_bytes(n, k)) + 64);
      void* packed = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
      cpu::pack_int8_panels(n, k, w.data(), kOffset, packed);
      const int64_t m = 13;
      std::vector<uint8_t> xq(static_cast<size_t>(m * k));
      for (uint8_t& v : xq) v = static_cast<uint8_t>(1 + next() % 127);
      xq[0] = 127;
      for (const int64_t c0 : {int64_t{0}, int64_t{16}}) {
        if (c0 >= n) continue;
        const int64_t nc = n - c0;
        for (const int64_t rows : {1, 5, 6, 7, 13}) {
          std::vector<int32_t> acc(static_cast<size_t>(rows * nc), -1);
          cpu::matmul_int8_panels(rows, c0, nc, k, xq.data(), packed, n, acc.data());
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < nc; ++j) {
              int64_t want = 0;
              for (int64_t i = 0; i < k; ++i)
                want += (int64_t{xq[r * k + i]} - kOffset) * w[static_cast<size_t>((c0 + j) * k + i)];
              ASSERT_EQ(acc[r * nc + j], want) << rows << " rows, c0 " << c0 << ": " << r << "," << j;
            }
        }
      }
    }
  }
}

// Where the panels serve (int8_panels_serve), translate's products give the same bits with them as
// through oneDNN's gemm without them: the same integer sums, dequantized by the same pass.
TEST(Int8, PanelsGiveTheSameProductsAsOneDnn) {
  const int64_t k = 512, n = 1536;
  const ops::QuantizedMatrix w = ops::quantize_rows(testing::random_tensor({n, k}, 21).to(DType::F32));
  if (!w.panels) GTEST_SKIP() << "the int8 panels do not serve at this level (" << ops::int8_activation_levels()
                              << " activation levels)";
  ops::QuantizedMatrix plain = w;
  plain.panels = nullptr;
  const Tensor bias = testing::random_tensor({n}, 22).to(DType::F32);
  ops::QuantizedMatrix alone = w;  // the panels without q, as Transformer::quantize_int8 keeps them
  ops::release_unpacked(alone);
  ASSERT_FALSE(alone.q.defined());
  for (const int64_t m : {1, 64, 256, 300, 1100}) {
    const Tensor x = testing::random_tensor({m, k}, 23 + m, -4, 4).to(DType::F32);
    Tensor a = Tensor::zeros({m, n}), b = Tensor::zeros({m, n}), c = Tensor::zeros({m, n});
    ops::matmul_int8(x, w, a, bias, ops::Activation::kRelu);
    ops::matmul_int8(x, plain, b, bias, ops::Activation::kRelu);
    ops::matmul_int8(x, alone, c, bias, ops::Activation::kRelu);
    for (int64_t i = 0; i < m * n; ++i) {
      ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << m << " rows: " << i;
      ASSERT_EQ(c.data<float>()[i], b.data<float>()[i]) << m << " rows: " << i;
    }
  }
}

TEST(Int8, QuantizedModelTranslatesLikeTheFloatModel) {
  const auto model = load_model(std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors");
  const std::vector<std::vector<int32_t>> sources = {{10, 20, 30, 40}, {5, 6, 7}, {50, 60, 70, 80, 90}, {11}};
  SearchOptions o;
  const auto plain = beam_search(*model, sources, o);
  model->quantize_int8();
  EXPECT_TRUE(model->quantized());
  const auto int8 = beam_search(*model, sources, o);
  for (size_t b = 0; b < sources.size(); ++b) {
    EXPECT_NEAR(int8[b][0].normalized, plain[b][0].normalized, 0.25 + 0.05 * std::abs(plain[b][0].normalized))
        << "sentence " << b;
  }
  // Training contexts never use the int8 copies.
  Rng rng(1);
  EXPECT_EQ(model->context(&rng).int8, nullptr);
  EXPECT_NE(model->context().int8, nullptr);
}

}  // namespace
}  // namespace tfm

namespace tfm {
namespace {

// A row with a NaN or an infinity (a broken model's activations) is quantized to zeros, as a row of
// zeros is: its products are 0 (the sanitizer build checks that no value is converted undefined).
TEST(Int8, NonFiniteActivationRowsAreQuantizedToZeros) {
  Tensor x = testing::random_tensor({3, 40}, 5).to(DType::F32);
  x.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[40 + 3] = std::numeric_limits<float>::infinity();
  const Tensor w = testing::random_tensor({20, 40}, 6).to(DType::F32);
  Tensor y = Tensor::zeros({3, 20}), exact = Tensor::zeros({3, 20});
  ops::matmul_int8(x, ops::quantize_rows(w), y);
  ops::matmul(x, w, exact, {.trans_b = true});
  for (int64_t c = 0; c < 20; ++c) {
    EXPECT_EQ(y.data<float>()[c], 0.0f) << c;
    EXPECT_EQ(y.data<float>()[20 + c], 0.0f) << c;
    EXPECT_NEAR(y.data<float>()[40 + c], exact.data<float>()[40 + c], 0.05) << c;  // the finite row as usual
  }
}

}  // namespace
}  // namespace tfm
