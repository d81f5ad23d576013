// What a user can get wrong gives an exception whose message names the problem and the values.
#include <gtest/gtest.h>

#include "core/device.h"
#include "core/param_store.h"
#include "testing/errors.h"
#include "ops/adam.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/softmax.h"

namespace tfm {
namespace {

using testing::expect_error;

TEST(Errors, MatmulNamesTheShapes) {
  expect_error([] { ops::matmul(Tensor::zeros({7, 5}), Tensor::zeros({4, 3}), Tensor::zeros({7, 3})); },
               {"matmul", "[7, 5]", "[4, 3]", "5", "4"});
  expect_error([] { ops::matmul(Tensor::zeros({7, 5}), Tensor::zeros({5, 3}), Tensor::zeros({7, 4})); },
               {"C has shape [7, 4]", "[7, 3]"});
  expect_error([] { ops::matmul(Tensor::zeros({7, 5}), Tensor::zeros({5, 3}, DType::F64), Tensor::zeros({7, 3})); },
               {"B has dtype float64", "float32"});
}

TEST(Errors, ElementwiseShapesAndRates) {
  expect_error([] { ops::add(Tensor::zeros({2, 3}), Tensor::zeros({3, 2}), Tensor::zeros({2, 3})); },
               {"add", "[2, 3]", "[3, 2]"});
  expect_error([] { ops::bias_add(Tensor::zeros({2, 3}), Tensor::zeros({4}), Tensor::zeros({2, 3})); },
               {"bias has shape [4]", "[3]"});
  expect_error([] { ops::dropout(Tensor::zeros({4}), 1.0, RngStream{}, Tensor::zeros({4})); },
               {"dropout rate", "[0, 1)", "1"});
}

TEST(Errors, EmbeddingNamesTheBadId) {
  Tensor ids = Tensor::from<int32_t>({3}, {1, 12, 2});
  expect_error([&] { ops::embedding(ids, Tensor::zeros({10, 4}), 1.0, Tensor::zeros({3, 4})); },
               {"token id 12", "position 1", "[0, 10)"});
  expect_error([&] { ops::embedding(ids, Tensor::zeros({20, 4}), 1.0, Tensor::zeros({3, 5})); }, {"[3, 5]"});
}

TEST(Errors, LossNamesTheBadTarget) {
  Tensor targets = Tensor::from<int32_t>({2}, {3, -4});
  expect_error([&] { ops::cross_entropy(Tensor::zeros({2, 5}), targets, {0.1, 0}, Tensor::zeros({2})); },
               {"target -4", "row 1", "[0, 5)"});
  expect_error([&] { ops::cross_entropy(Tensor::zeros({2, 5}), targets, {1.5, -4}, Tensor::zeros({2})); },
               {"label smoothing", "1.5"});
}

TEST(Errors, AttentionShapesAndLengths) {
  ops::AttentionArgs args;
  args.heads = 3;
  expect_error([&] {
    ops::attention(Tensor::zeros({2, 5, 8}), Tensor::zeros({2, 7, 8}), Tensor::zeros({2, 7, 8}), args,
                   Tensor::zeros({2, 3, 5, 7}), Tensor::zeros({2, 5, 8}));
  }, {"multiples", "3 heads"});
  args.heads = 2;
  args.key_lengths = Tensor::from<int32_t>({2}, {7, 9});
  expect_error([&] {
    ops::attention(Tensor::zeros({2, 5, 8}), Tensor::zeros({2, 7, 8}), Tensor::zeros({2, 7, 8}), args,
                   Tensor::zeros({2, 2, 5, 7}), Tensor::zeros({2, 5, 8}));
  }, {"key_lengths[1] = 9", "[0, 7]"});
  args.key_lengths = Tensor();
  expect_error([&] {
    ops::attention(Tensor::zeros({2, 5, 8}), Tensor::zeros({2, 7, 8}), Tensor::zeros({2, 6, 8}), args,
                   Tensor::zeros({2, 2, 5, 7}), Tensor::zeros({2, 5, 8}));
  }, {"[2, 7, 8]", "[2, 6, 8]"});
}

TEST(Errors, LayerNormSoftmaxAdam) {
  expect_error([] {
    ops::layer_norm(Tensor::zeros({3, 4}), Tensor::zeros({5}), Tensor::zeros({4}), 1e-5, Tensor::zeros({3, 4}),
                    Tensor::zeros({3}), Tensor::zeros({3}));
  }, {"gamma has shape [5]", "[4]"});
  expect_error([] { ops::softmax(Tensor::zeros({3, 0}), Tensor::zeros({3, 0})); }, {"softmax", "[3, 0]"});
  expect_error([] {
    ops::adam_step(Tensor::zeros({4}), Tensor::zeros({5}), Tensor::zeros({4}), Tensor::zeros({4}), {});
  }, {"adam_step", "[5]"});
}

TEST(Errors, NoDeviceWithoutABackend) {
  if (device_memory(Device::CUDA) != nullptr) GTEST_SKIP() << "this machine has a CUDA device";
  const std::string why = builtin_device_absence(Device::CUDA);  // "this build has no backend for cuda (...)",
  EXPECT_FALSE(why.empty());                                       // or "no CUDA device found (...)"
  expect_error([] { Tensor::zeros({2}, DType::F32, Device::CUDA); }, {"cuda", why.c_str()});
}

}  // namespace
}  // namespace tfm
