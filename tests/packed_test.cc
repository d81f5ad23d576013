// Packed weights for decoding (ops/packed.h): the product against BLAS's at the row counts where
// the packed path is taken and where it falls back, and a model with packed weights against the
// same model without them.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "decode/search.h"
#include "decode/shortlist.h"
#include "model/batch.h"
#include "model/checkpoint.h"
#include "ops/cpu/isa.h"
#include "ops/cpu/kernels.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/packed.h"
#include "testing/errors.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(double(a.data<float>()[i]) - b.data<float>()[i]));
  return m;
}

TEST(Packed, ProductMatchesBlasAtEveryRowCount) {
  for (auto [in, out] : {std::pair<int64_t, int64_t>{96, 40}, {2048, 24}, {33, 70}}) {
    const Tensor w = testing::random_tensor({out, in}, 7).to(DType::F32);
    const ops::PackedMatrix p = ops::pack_weight(w);
    for (int64_t rows : {1, 5, 64, 128, 200, 700}) {
      SCOPED_TRACE(::testing::Message() << rows << " rows, in " << in << ", out " << out);
      const Tensor x = testing::random_tensor({rows, in}, 8 + rows).to(DType::F32);
      Tensor want = Tensor::zeros({rows, out}), got = Tensor::empty({rows, out});
      got.fill(12345.0);  // every element must be written
      ops::matmul(x, w, want, {.trans_b = true});
      ops::matmul_packed(x, p, got);
      // Sums of `in` products of values in [-1, 1]: float32 rounding, not a different product.
      EXPECT_LT(max_abs_diff(want, got), 1e-5 * in);
    }
  }
}

TEST(Packed, BiasPackedWithTheWeightIsAddedByTheProduct) {
  const Tensor w = testing::random_tensor({40, 96}, 7).to(DType::F32);
  const Tensor bias = testing::random_tensor({40}, 9).to(DType::F32);
  const ops::PackedMatrix p = ops::pack_weight(w, bias);
  for (int64_t rows : {5, 700}) {  // a decoding step's rows and an encoder batch's
    SCOPED_TRACE(::testing::Message() << rows << " rows");
    const Tensor x = testing::random_tensor({rows, 96}, 10 + rows).to(DType::F32);
    Tensor want = Tensor::zeros({rows, 40}), got = Tensor::empty({rows, 40});
    ops::matmul(x, w, want, {.trans_b = true});
    ops::bias_add(want, bias, want);
    ops::matmul_packed(x, p, got);
    EXPECT_LT(max_abs_diff(want, got), 1e-5 * 96);
    // With the ReLU packed too: oneDNN's post-op takes max(0, ·) after the bias.
    ops::relu(want, want);
    ops::matmul_packed(x, ops::pack_weight(w, bias, ops::Activation::kRelu), got);
    EXPECT_LT(max_abs_diff(want, got), 1e-5 * 96);
    int64_t zeros = 0;
    for (int64_t i = 0; i < got.numel(); ++i) zeros += got.data<float>()[i] == 0.0f;
    EXPECT_GT(zeros, got.numel() / 4);
  }
  EXPECT_THROW(ops::pack_weight(w, Tensor::zeros({39})), Error);
}

// Wide outputs (8,192 columns and more) are packed in one column block per thread; 3 threads give
// blocks of 2,731 and 2,732 columns over 8,195. Beyond 256 rows they take ops::matmul and the bias
// added after it, while the plain weight is there.
TEST(Packed, WideOutputsInColumnBlocksMatchBlas) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(3);
  const Tensor w = testing::random_tensor({8195, 24}, 11).to(DType::F32);
  const Tensor bias = testing::random_tensor({8195}, 12).to(DType::F32);
  const ops::PackedMatrix p = ops::pack_weight(w, bias);
  // Without its plain weight (given back after packing) the product cannot fall back to BLAS: the
  // packed copy serves every row count.
  ops::PackedMatrix alone = ops::pack_weight(w, bias);
  alone.weight = Tensor();
  for (int64_t rows : {1, 64, 256, 300}) {
    for (const ops::PackedMatrix* packed : {&p, static_cast<const ops::PackedMatrix*>(&alone)}) {
      SCOPED_TRACE(::testing::Message() << rows << " rows" << (packed == &alone ? ", no plain weight" : ""));
      const Tensor x = testing::random_tensor({rows, 24}, 13 + rows).to(DType::F32);
      Tensor want = Tensor::zeros({rows, 8195}), got = Tensor::empty({rows, 8195});
      got.fill(12345.0);  // every element must be written
      ops::matmul(x, w, want, {.trans_b = true});
      ops::bias_add(want, bias, want);
      ops::matmul_packed(x, *packed, got);
      EXPECT_LT(max_abs_diff(want, got), 1e-5 * 24);
    }
    // With a ReLU: the post-op, or (300 rows, plain weight) BLAS's product, the bias, then ReLU.
    const Tensor x = testing::random_tensor({rows, 24}, 13 + rows).to(DType::F32);
    Tensor want = Tensor::zeros({rows, 8195}), got = Tensor::empty({rows, 8195});
    ops::matmul(x, w, want, {.trans_b = true});
    ops::bias_add(want, bias, want);
    ops::relu(want, want);
    ops::matmul_packed(x, ops::pack_weight(w, bias, ops::Activation::kRelu), got);
    EXPECT_LT(max_abs_diff(want, got), 1e-5 * 24);
  }
  omp_set_num_threads(threads);
}

// The project's own panel product (ops/cpu/simd/panel_gemm.cc), in the SIMD build of this test's
// level, against its definition: each output the fused multiply-add chain over i = 0 … k − 1 in
// order, then the bias, then the activation. Bit for bit, at 1, 2 and 3 threads, for shapes with
// partial panels (n not a multiple of 16), partial tiles (m not a multiple of 6), several blocks of
// k (256 each), several blocks of rows (256 KB of x each: 108 rows at k = 600), and the rows split
// between the threads (from 512 rows; 601 leaves a partial tile); k = 0 gives the bias alone.
TEST(Panels, ProductIsTheOrderedFusedSumBitForBit) {
  const int threads = omp_get_max_threads();
  for (auto [n, k] :
       {std::pair<int64_t, int64_t>{1, 1}, {15, 7}, {16, 256}, {17, 257}, {40, 600}, {70, 33}, {16, 0}, {20, 512}}) {
    const Tensor w = testing::random_tensor({n, k}, 21 + n).to(DType::F32);
    const Tensor bias = testing::random_tensor({n}, 22).to(DType::F32);
    std::vector<float> panels(static_cast<size_t>(cpu::panel_floats(n, k)), 12345.0f);
    ASSERT_EQ(static_cast<int64_t>(panels.size()), (n + 15) / 16 * 16 * k);
    cpu::pack_panels(n, k, w.data<float>(), panels.data());
    for (int64_t m : {1, 5, 6, 7, 64, 250, 601}) {
      const Tensor x = testing::random_tensor({m, k}, 23 + m).to(DType::F32);
      std::vector<float> sums(static_cast<size_t>(m * n));  // the ordered fused sums, before the bias
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < n; ++c) {
          float s = 0.0f;
          for (int64_t i = 0; i < k; ++i) s = std::fma(x.data<float>()[r * k + i], w.data<float>()[c * k + i], s);
          sums[static_cast<size_t>(r * n + c)] = s;
        }
      for (ops::Activation act :
           {ops::Activation::kNone, ops::Activation::kRelu, ops::Activation::kSwish, ops::Activation::kGelu}) {
        for (bool with_bias : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "m " << m << ", n " << n << ", k " << k << ", " << ops::activation_name(act)
                                            << (with_bias ? ", bias" : ""));
          std::vector<float> want(static_cast<size_t>(m * n));
          for (int64_t r = 0; r < m; ++r)
            for (int64_t c = 0; c < n; ++c) {
              float s = sums[static_cast<size_t>(r * n + c)];
              if (with_bias) s += bias.data<float>()[c];
              if (act == ops::Activation::kRelu) s = s > 0.0f ? s : 0.0f;
              want[static_cast<size_t>(r * n + c)] = s;
            }
          if (act == ops::Activation::kSwish || act == ops::Activation::kGelu)
            cpu::activate<float>(m * n, act, want.data(), want.data());
          for (int t : {1, 2, 3}) {
            omp_set_num_threads(t);
            std::vector<float> got(static_cast<size_t>(m * n), 12345.0f);  // every element must be written
            cpu::matmul_panels(m, n, k, x.data<float>(), panels.data(), with_bias ? bias.data<float>() : nullptr,
                               act, got.data());
            ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << t << " threads";
          }
          omp_set_num_threads(threads);
        }
      }
    }
  }
}

TEST(Packed, LeadingDimsFoldIntoRows) {
  const Tensor w = testing::random_tensor({16, 32}, 3).to(DType::F32);
  const Tensor x = testing::random_tensor({3, 4, 32}, 4).to(DType::F32);
  Tensor want = Tensor::zeros({3, 4, 16}), got = Tensor::zeros({3, 4, 16});
  ops::matmul(x, w, want, {.trans_b = true});
  ops::matmul_packed(x, ops::pack_weight(w), got);
  EXPECT_LT(max_abs_diff(want, got), 1e-4);
}

// A residual connection's sum taken by the product's call (Residual::forward in inference): on the
// CPU exactly the product, then ops::add(r, y, y), bit for bit, for ops::linear and for packed
// weights (float32 at a decoding step's rows and an encoder batch's, and bf16 where packed); refused
// with an activation, a shape of another output, or the output itself.
TEST(Packed, ResidualIsAddedAsTheResidualConnectionsSum) {
  const Tensor w = testing::random_tensor({40, 96}, 17).to(DType::F32);
  const Tensor bias = testing::random_tensor({40}, 18).to(DType::F32);
  for (int64_t rows : {5, 700}) {
    SCOPED_TRACE(::testing::Message() << rows << " rows");
    const Tensor x = testing::random_tensor({rows, 96}, 19 + rows).to(DType::F32);
    const Tensor r = testing::random_tensor({rows, 40}, 20 + rows).to(DType::F32);
    auto expect_same_bits = [](const Tensor& a, const Tensor& b, const char* what) {
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.bytes()), 0) << what;
    };
    Tensor want = Tensor::empty({rows, 40}), got = Tensor::empty({rows, 40});
    ops::linear(x, w, bias, ops::Activation::kNone, want);
    ops::add(r, want, want);
    ops::linear(x, w, bias, ops::Activation::kNone, got, ops::Precision::kFloat32, r);
    expect_same_bits(want, got, "linear");
    std::vector<ops::Precision> precisions{ops::Precision::kFloat32};
    if (ops::packs_bf16(Device::CPU)) precisions.push_back(ops::Precision::kBf16);
    for (const ops::Precision precision : precisions) {
      const ops::PackedMatrix p = ops::pack_weight(w, bias, ops::Activation::kNone, precision);
      ops::matmul_packed(x, p, want);
      ops::add(r, want, want);
      got.fill(12345.0);
      ops::matmul_packed(x, p, got, r);
      expect_same_bits(want, got, precision == ops::Precision::kBf16 ? "packed bf16" : "packed float32");
    }
  }
  const Tensor x = testing::random_tensor({3, 96}, 30).to(DType::F32), y = Tensor::empty({3, 40});
  testing::expect_error([&] { ops::linear(x, w, bias, ops::Activation::kRelu, y, ops::Precision::kFloat32,
                                          Tensor::zeros({3, 40})); },
                        {"residual", "relu"});
  testing::expect_error([&] { ops::linear(x, w, bias, ops::Activation::kNone, y, ops::Precision::kFloat32,
                                          Tensor::zeros({3, 41})); },
                        {"residual", "[3, 41]", "[3, 40]"});
  testing::expect_error([&] { ops::linear(x, w, bias, ops::Activation::kNone, y, ops::Precision::kFloat32, y); },
                        {"residual", "output itself"});
  testing::expect_error([&] { ops::matmul_packed(x, ops::pack_weight(w, bias, ops::Activation::kRelu), y,
                                                 Tensor::zeros({3, 40})); },
                        {"matmul_packed", "residual", "relu"});
}

TEST(Packed, RefusesShapesThatDoNotFit) {
  const Tensor w = testing::random_tensor({16, 32}, 3).to(DType::F32);
  const ops::PackedMatrix p = ops::pack_weight(w);
  Tensor x = Tensor::zeros({4, 31}), y = Tensor::zeros({4, 16});
  EXPECT_THROW(ops::matmul_packed(x, p, y), Error);
  Tensor x2 = Tensor::zeros({4, 32}), y2 = Tensor::zeros({5, 16});
  EXPECT_THROW(ops::matmul_packed(x2, p, y2), Error);
  EXPECT_THROW(ops::pack_weight(Tensor::zeros({4, 4}, DType::F64)), Error);
}

TEST(Packed, PackedModelTranslatesAsTheFloatModel) {
  const auto model = load_model(std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors");
  const std::vector<std::vector<int32_t>> sources = {{10, 20, 30, 40}, {5, 6, 7}, {50, 60, 70, 80, 90}, {11}};
  SearchOptions o;
  o.beam_size = 3;
  o.n_best = 3;
  const auto plain = beam_search(*model, sources, o);
  model->pack_weights();
  EXPECT_TRUE(model->packed());
  // The output projection (the tied embedding) is packed with the layers' weights.
  EXPECT_NE(model->context().packed_weight(model->tgt_embedding), nullptr);
  const auto packed = beam_search(*model, sources, o);
  ASSERT_EQ(packed.size(), plain.size());
  for (size_t b = 0; b < sources.size(); ++b) {
    ASSERT_EQ(packed[b].size(), plain[b].size());
    for (size_t h = 0; h < plain[b].size(); ++h) {
      EXPECT_EQ(packed[b][h].tokens, plain[b][h].tokens) << "sentence " << b << " hypothesis " << h;
      EXPECT_NEAR(packed[b][h].normalized, plain[b][h].normalized, 1e-4) << "sentence " << b;
    }
  }
  // Training contexts never use the packed copies.
  Rng rng(1);
  EXPECT_EQ(model->context(&rng).packed, nullptr);
  EXPECT_NE(model->context().packed, nullptr);
}

// Weights packed in bfloat16 (translate --bf16 where the CPU has bfloat16 instructions): the product
// is Precision::kBf16's, the plain bf16 product's to float32 rounding (both sum exact products of
// the same rounded inputs in float32), with the bias and ReLU in the same pass, for the one block
// of narrow outputs and the per-thread blocks of wide ones, at decoding's and the encoder's row
// counts. Without bfloat16 instructions packing in bf16 is refused, naming how bf16 runs here.
TEST(Packed, Bf16PackedProductIsTheBf16Product) {
  const Tensor w0 = testing::random_tensor({40, 96}, 71).to(DType::F32);
  if (!ops::bf16_native()) {
    testing::expect_error([&] { ops::pack_weight(w0, Tensor(), ops::Activation::kNone, ops::Precision::kBf16); },
                          {"bf16 packed weights need bfloat16 instructions", ops::bf16_path()});
    GTEST_SKIP() << "no bfloat16 instructions at this level: " << ops::bf16_path();
  }
  for (auto [in, out] : {std::pair<int64_t, int64_t>{96, 40}, {512, 2048}, {256, 9000}}) {
    const Tensor w = testing::random_tensor({out, in}, 72 + out).to(DType::F32);
    const Tensor bias = testing::random_tensor({out}, 73).to(DType::F32);
    for (const bool with_bias : {false, true}) {
      const ops::PackedMatrix p = ops::pack_weight(w, with_bias ? bias : Tensor(),
                                                   with_bias ? ops::Activation::kRelu : ops::Activation::kNone,
                                                   ops::Precision::kBf16);
      ASSERT_NE(p.packed, nullptr);
      for (int64_t rows : {1, 7, 64, 300}) {
        SCOPED_TRACE(::testing::Message() << rows << " rows, in " << in << ", out " << out << (with_bias ? ", bias, ReLU" : ""));
        const Tensor x = testing::random_tensor({rows, in}, 74 + rows).to(DType::F32);
        Tensor want = Tensor::zeros({rows, out}), got = Tensor::empty({rows, out}), f32 = Tensor::zeros({rows, out});
        got.fill(12345.0);
        ops::matmul(x, w, want, {.trans_b = true, .precision = ops::Precision::kBf16});
        ops::matmul(x, w, f32, {.trans_b = true});
        if (with_bias) {
          ops::bias_add(want, bias, want);
          ops::relu(want, want);
          ops::bias_add(f32, bias, f32);
          ops::relu(f32, f32);
        }
        ops::matmul_packed(x, p, got);
        const double scale = std::sqrt(static_cast<double>(in));  // |sums| grow as √in
        EXPECT_LE(max_abs_diff(want, got), 1e-5 * scale);
        EXPECT_GT(max_abs_diff(f32, got), 1e-4) << "the same as float32: the inputs were not rounded";
      }
    }
  }
}

// A model packed in bfloat16 translates as the same model with bf16 products on its plain weights:
// the same hypotheses, scores to float32 rounding; also with a shortlist (whose rows of the output
// projection are packed in bf16 for each batch).
TEST(Packed, Bf16PackedModelTranslatesAsTheBf16Model) {
  if (!ops::bf16_native()) GTEST_SKIP() << "no bfloat16 instructions at this level: " << ops::bf16_path();
  const auto model = load_model(std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors");
  const std::vector<std::vector<int32_t>> sources = {{10, 20, 30, 40}, {5, 6, 7}, {50, 60, 70, 80, 90}, {11}};
  SearchOptions o;
  o.beam_size = 3;
  o.n_best = 3;
  const int64_t V = model->config().vocab_size;
  std::vector<int32_t> listed;
  for (int32_t id = 4; id < V; id += 2) listed.push_back(id);
  const Shortlist half = Shortlist::build({{4}}, {listed}, V,
                                          {.per_source = 0, .frequent = static_cast<int64_t>(listed.size())}, "");
  const auto f32 = beam_search(*model, sources, o);
  model->set_inference_products(ops::Precision::kBf16);
  const auto plain = beam_search(*model, sources, o), plain_listed = beam_search(*model, sources, o, &half);
  model->pack_weights(Transformer::PlainWeights::kRelease, ops::Precision::kBf16);
  ASSERT_EQ(model->context().packed_weight(model->tgt_embedding)->precision, ops::Precision::kBf16);
  const auto packed = beam_search(*model, sources, o), packed_listed = beam_search(*model, sources, o, &half);
  double moved = 0;
  for (const auto& [a, b, what] : {std::tuple{&plain, &packed, "whole vocabulary"},
                                   std::tuple{&plain_listed, &packed_listed, "shortlist"}})
    for (size_t s = 0; s < sources.size(); ++s) {
      ASSERT_EQ((*b)[s].size(), (*a)[s].size()) << what;
      for (size_t h = 0; h < (*a)[s].size(); ++h) {
        EXPECT_EQ((*b)[s][h].tokens, (*a)[s][h].tokens) << what << ", sentence " << s << " hypothesis " << h;
        EXPECT_NEAR((*b)[s][h].normalized, (*a)[s][h].normalized, 1e-4) << what << ", sentence " << s;
      }
    }
  for (size_t s = 0; s < sources.size(); ++s) moved = std::max(moved, std::abs(plain[s][0].normalized - f32[s][0].normalized));
  EXPECT_GT(moved, 1e-6) << "bf16 scores equal float32's";
  // Given back: scoring's whole-target forward pass runs on the packed copies alone (Q, K and V
  // packed each on its own too).
  const ParamStore& p = model->params();
  EXPECT_TRUE(p.released(p.find("decoder.layers.0.self_attn.q_proj.weight")));
  const Batch batch = make_batch({sources[0]}, {packed[0][0].tokens}, model->config());
  EXPECT_NO_THROW(model->forward(model->context(), batch, nullptr));
}

}  // namespace
}  // namespace tfm
