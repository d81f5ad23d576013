// Decoding's GPU steps against the CPU: row moves (index_select, split_columns into a cache's
// slab), small uploads through the pinned ring, and the top-k selection.
#include "cuda/common.h"

#include <cmath>
#include <string>
#include <vector>

#include "ops/copy.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/top_k.h"

namespace tfm {
namespace {

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

}  // namespace
}  // namespace tfm
