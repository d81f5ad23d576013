// The engine's core: tensors and views, the parameter store's flat buffers, the counter-based
// random generator, and results that do not depend on the thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/device.h"
#include "core/param_store.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "core/threads.h"
#include "ops/adam.h"
#include "ops/attention.h"
#include "ops/copy.h"
#include "ops/cpu/simd/dropout_mask.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "testing/errors.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

TEST(Tensor, ViewsShareMemory) {
  Tensor t = Tensor::zeros({4, 3});
  Tensor v = t.view({2, 6});
  v.data<float>()[7] = 5.0f;
  EXPECT_EQ(t.data<float>()[7], 5.0f);
  Tensor r = t.rows(2, 2);
  EXPECT_EQ(r.shape(), Shape({2, 3}));
  EXPECT_EQ(r.data<float>()[1], 5.0f);  // element 7 = row 2, column 1
  EXPECT_THROW(t.view({5, 3}), Error);
  EXPECT_THROW(t.rows(3, 2), Error);
  EXPECT_THROW(t.data<double>(), Error);
}

TEST(Tensor, ConvertsBetweenDtypes) {
  Tensor t = Tensor::from<float>({3}, {1.5f, -2.0f, 0.25f});
  EXPECT_EQ(t.to(DType::F64).to_doubles(), (std::vector<double>{1.5, -2.0, 0.25}));
  EXPECT_EQ(t.clone().to_doubles(), t.to_doubles());
}

TEST(ParamStore, OneFlatBufferForValuesAndOneForGradients) {
  ParamStore store;
  const int a = store.add("a", {3, 5});
  const int b = store.add("b", {7});
  const int c = store.add("c", {2, 2});
  EXPECT_THROW(store.add("a", {1}), Error);
  store.allocate();
  EXPECT_THROW(store.add("d", {1}), Error);
  EXPECT_EQ(store.parameter_count(), 15 + 7 + 4);
  EXPECT_EQ(store.find("b"), b);
  EXPECT_EQ(store.find("nope"), -1);
  // Every parameter starts on a 64-byte boundary, in order, inside the one buffer.
  const char* base = static_cast<const char*>(store.values().raw());
  int64_t end = 0;
  for (int id : {a, b, c}) {
    const char* p = static_cast<const char*>(store.value(id).raw());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_GE(p - base, end);
    end = (p - base) + static_cast<int64_t>(store.value(id).bytes());
    EXPECT_EQ(store.grad(id).raw(), static_cast<char*>(store.grads().raw()) + (p - base));
  }
  EXPECT_LE(end, static_cast<int64_t>(store.values().bytes()));
  // Writing through a view writes the flat buffer.
  store.value(b).fill(2.0);
  store.grad(c).fill(3.0);
  double sum_values = 0, sum_grads = 0;
  for (double x : store.values().to_doubles()) sum_values += x;
  for (double x : store.grads().to_doubles()) sum_grads += x;
  EXPECT_EQ(sum_values, 14.0);
  EXPECT_EQ(sum_grads, 12.0);
  store.zero_grad();
  for (double x : store.grads().to_doubles()) EXPECT_EQ(x, 0.0);
  EXPECT_THROW(store.value(3), Error);
}

// Pages of the range [p, p + bytes) that are resident, by mincore.
int64_t resident_pages(const void* p, size_t bytes) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  std::vector<unsigned char> in((end - first + page - 1) / page);
  EXPECT_EQ(mincore(reinterpret_cast<void*>(first), end - first, in.data()), 0);
  int64_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

TEST(ParamStore, ReleasedValuesLeaveMemoryAndRefuseToBeRead) {
  ParamStore store;
  const int a = store.add("layer.a", {3});
  const int big = store.add("layer.big", {1000, 1000});  // 4 MB: whole pages to give back
  const int b = store.add("layer.b", {5});
  store.allocate();
  store.value(a).fill(1.0);
  store.value(big).fill(2.0);
  store.value(b).fill(3.0);
  const Tensor view = store.value(big);  // taken before the release, to look at its pages
  const int64_t pages = resident_pages(view.raw(), view.bytes());
  EXPECT_GE(pages, 976);
  store.release(big);
  EXPECT_TRUE(store.released(big));
  EXPECT_FALSE(store.released(a));
  // At most the two pages shared with the neighbours stay, and nothing of the old values: an old
  // view reads zeros or NaN.
  EXPECT_LE(resident_pages(view.raw(), view.bytes()), 2);
  for (double v : view.to_doubles()) ASSERT_TRUE(std::isnan(v) || v == 0.0) << v;
  // The neighbours keep their values; the released one is refused by name, as is the whole buffer.
  EXPECT_EQ(store.value(a).to_doubles(), std::vector<double>(3, 1.0));
  EXPECT_EQ(store.value(b).to_doubles(), std::vector<double>(5, 3.0));
  testing::expect_error([&] { store.value(big); }, {"layer.big", "released"});
  testing::expect_error([&] { store.values(); }, {"1 parameters were released"});
  store.release(big);  // twice is once
  testing::expect_error([&] { store.values(); }, {"1 parameters were released"});
  EXPECT_EQ(store.grad(big).numel(), 1000000);  // gradients are another buffer
}

// Resident memory of this process, from /proc/self/statm (Linux), in bytes.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// Big on-demand zeros come from an anonymous mapping (core/tensor.cc): still zero, aligned and
// writable, small ones from the heap; memory becomes resident only where written.
// A stand-in for a device backend (core/device.h), on host memory: new memory is filled with 0xAB,
// and every call is counted, so that the tests see which tensor operations reach the backend.
class SimulatedDevice final : public DeviceMemory {
 public:
  std::shared_ptr<void> allocate(size_t bytes) override {
    ++allocations;
    void* p = std::malloc(bytes);
    std::memset(p, 0xAB, bytes);
    return std::shared_ptr<void>(p, std::free);
  }
  void zero(void* data, size_t bytes) override {
    ++zeros;
    std::memset(data, 0, bytes);
  }
  void fill(void* data, DType dtype, int64_t n, double value) override {
    ++fills;
    ASSERT_EQ(dtype, DType::F32);
    std::fill_n(static_cast<float*>(data), n, static_cast<float>(value));
  }
  void copy(void* dst, Device to, const void* src, Device from, size_t bytes) override {
    copies.push_back({from, to});
    std::memcpy(dst, src, bytes);
  }
  std::string describe() const override { return "simulated"; }
  int allocations = 0, zeros = 0, fills = 0;
  std::vector<std::pair<Device, Device>> copies;  // (from, to)
};

TEST(Tensor, DeviceTensorsGoThroughTheDevicesBackend) {
  // Without a backend (a build without CUDA, or a machine without a GPU), a CUDA tensor is
  // refused, saying why.
  if (device_memory(Device::CUDA) == nullptr) {
    const std::string why = builtin_device_absence(Device::CUDA);  // no backend, or no device, in words
    EXPECT_FALSE(why.empty());
    testing::expect_error([] { Tensor::zeros({4}, DType::F32, Device::CUDA); }, {"device 'cuda'", why.c_str()});
  }
  SimulatedDevice dev;
  register_device_memory(Device::CUDA, &dev);
  struct Unregister {
    ~Unregister() { register_device_memory(Device::CUDA, nullptr); }
  } unregister;
  const Tensor host = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor z = Tensor::zeros({2, 3}, DType::F32, Device::CUDA);
  EXPECT_EQ(z.device(), Device::CUDA);
  EXPECT_EQ(z.to_doubles(), std::vector<double>(6, 0.0));  // zeroed through the backend, read back
  EXPECT_EQ(dev.zeros, 1);
  const Tensor d = host.to_device(Device::CUDA);
  const Tensor e = d.clone();  // device to device
  EXPECT_EQ(e.device(), Device::CUDA);
  const Tensor back = e.to_device(Device::CPU);
  EXPECT_EQ(back.device(), Device::CPU);
  EXPECT_EQ(back.to_doubles(), host.to_doubles());
  const std::vector<std::pair<Device, Device>> copies = {
      {Device::CUDA, Device::CPU}, {Device::CPU, Device::CUDA}, {Device::CUDA, Device::CUDA}, {Device::CUDA, Device::CPU}};
  EXPECT_EQ(dev.copies, copies);  // z read back; host to the device; the clone; e back
  z.fill(2.5);
  EXPECT_EQ(dev.fills, 1);
  EXPECT_EQ(z.to_doubles(), std::vector<double>(6, 2.5));
  const Tensor lazy = Tensor::zeros_on_demand({1000}, DType::F32, Device::CUDA);
  EXPECT_EQ(lazy.to_doubles(), std::vector<double>(1000, 0.0));
  // The CPU's own copies never reach the backend; conversions of device tensors are refused.
  const size_t before = dev.copies.size();
  host.clone();
  EXPECT_EQ(dev.copies.size(), before);
  testing::expect_error([&] { d.to(DType::F64); }, {"to(float64) of a cuda tensor"});
}

// The build's own CUDA memory (ops/cuda/memory.cu), where a GPU is found: every dtype round-trips,
// zeros and fills; freed blocks come back for the next allocation of their size.
TEST(Tensor, CudaMemoryWhereThereIsAGpu) {
  DeviceMemory* cuda = builtin_device_memory(Device::CUDA);
  if (cuda == nullptr) GTEST_SKIP() << "no CUDA backend in this build, or no CUDA device";
  std::printf("CUDA device: %s\n", cuda->describe().c_str());
  for (const DType dt : {DType::F32, DType::F64, DType::I32, DType::I8}) {
    const Tensor host = Tensor::from<double>({3, 5}, {1, -2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 100}).to(dt);
    const Tensor d = host.to_device(Device::CUDA);
    EXPECT_EQ(d.device(), Device::CUDA);
    EXPECT_EQ(d.to_doubles(), host.to_doubles()) << name(dt);
    EXPECT_EQ(d.clone().to_doubles(), host.to_doubles()) << name(dt);
    d.fill(-3);
    EXPECT_EQ(d.to_doubles(), std::vector<double>(15, -3.0)) << name(dt);
    d.zero();
    EXPECT_EQ(d.to_doubles(), std::vector<double>(15, 0.0)) << name(dt);
  }
  void* first = nullptr;
  {
    const Tensor a = Tensor::empty({1 << 20}, DType::F32, Device::CUDA);
    first = a.raw();
  }
  const Tensor b = Tensor::empty({1 << 20}, DType::F32, Device::CUDA);
  EXPECT_EQ(b.raw(), first) << "a freed block of the same size was not reused";
  const Tensor big = Tensor::zeros_on_demand({int64_t{3} << 20}, DType::F32, Device::CUDA);
  EXPECT_EQ(big.to_doubles(), std::vector<double>(size_t{3} << 20, 0.0));
}

// Medium blocks (1 to 32 MiB) are kept when freed and handed out again for a request of the same
// size (core/tensor.cc), from mappings of their own, so that the small objects made between two
// decoding batches cannot split them and grow the heap. 3 MiB + 4 KB: a size no other test keeps.
TEST(Tensor, FreedMediumBlocksAreReused) {
  const int64_t n = (int64_t{3} << 20) / 4 + 1024;
  const void* first = nullptr;
  {
    const Tensor a = Tensor::empty({n});
    first = a.data<float>();
#if !defined(__SANITIZE_ADDRESS__)  // there, from aligned_alloc
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 4096, 0u);  // a mapping's own pages
#endif
  }
  const Tensor b = Tensor::empty({n - 16});
  EXPECT_EQ(b.data<float>(), first);
  const Tensor c = Tensor::empty({n});  // the kept block is in use: a new one
  EXPECT_NE(c.data<float>(), first);
  c.fill(1.0);
  EXPECT_EQ(c.data<float>()[n - 1], 1.0f);
}

TEST(Tensor, ZerosOnDemandAreZeroAlignedAndWritable) {
  {
    const int64_t before = resident_bytes();
    const Tensor big = Tensor::zeros_on_demand({int64_t{64} << 20});  // 256 MB
    const int64_t untouched = resident_bytes();
    big.fill(1.0);
    const int64_t written = resident_bytes();
    EXPECT_LT(untouched - before, int64_t{16} << 20);
    EXPECT_GT(written - before, int64_t{200} << 20) << "the measurement itself does not work";
  }
  for (int64_t n : {int64_t{5}, int64_t{3} << 20}) {
    const Tensor t = Tensor::zeros_on_demand({n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
    const float* p = t.data<float>();
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::abs(p[i]);
    EXPECT_EQ(sum, 0.0) << n;
    t.fill(1.5);
    EXPECT_EQ(t.data<float>()[n - 1], 1.5f);
  }
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Blocks above 32 MiB are kept when freed and handed out again (core/tensor.cc), so a decoding
// step's [rows, vocabulary] logits do not fault in fresh pages every step; a kept block serves
// requests of half its size up to its own, and never a bigger one.
TEST(Tensor, LargeBlocksAreReused) {
  const int64_t n = int64_t{40} << 18;  // 40 MiB of float32
  const void* first = nullptr;
  {
    const Tensor t = Tensor::empty({n});
    first = t.raw();
    t.fill(2.0);
  }
  {
    const long faults = minor_faults();
    const Tensor again = Tensor::empty({n - 1000});
    again.fill(1.0);  // a new mapping would fault in 10,240 pages here
    EXPECT_LT(minor_faults() - faults, 1000);
    EXPECT_EQ(again.raw(), first);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(again.raw()) % 64, 0u);
    const Tensor bigger = Tensor::empty({2 * n});  // the kept block is in use, and too small anyway
    EXPECT_NE(bigger.raw(), first);
    again.fill(3.0);
    EXPECT_EQ(again.data<float>()[n - 1001], 3.0f);
  }
  const Tensor small = Tensor::empty({n / 4});  // 10 MiB: from the heap, not a kept block of 40 or 80
  EXPECT_NE(small.raw(), first);
  const Tensor zeros = Tensor::zeros({n});  // a reused block is still cleared by zeros()
  EXPECT_EQ(zeros.data<float>()[0], 0.0f);
  EXPECT_EQ(zeros.data<float>()[n - 1], 0.0f);
}

TEST(Rng, PhiloxKnownAnswers) {
  // Known-answer vectors of Philox4x32-10 published with the algorithm (Random123).
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (std::array<uint32_t, 4>{0xd16cfe09u, 0x94fdcceBu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Rng, StreamsDifferAndUniformsLookUniform) {
  Rng rng(123);
  const RngStream s1 = rng.next(), s2 = rng.next();
  EXPECT_NE(s1.uniform(0), s2.uniform(0));
  EXPECT_EQ(rng.counter(), 2u);
  double mean = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = s1.uniform(static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    mean += u;
  }
  EXPECT_NEAR(mean / n, 0.5, 0.005);
  Rng again(0);
  again.restore(123, 1);
  EXPECT_EQ(again.next().uniform(17), s2.uniform(17));
}

TEST(Rng, SixteenBlocksAtOnceAreTheBlocksOneByOne) {
  // Keys, streams and blocks with high words set, and a run of blocks across 2^32.
  for (const RngStream s : {RngStream{0, 0}, RngStream{0x0123456789abcdefull, 0xfedcba9876543210ull}}) {
    for (const uint64_t first : {0ull, 5ull, (1ull << 32) - 7, 0xffffffffffffff00ull}) {
      float wide[4 * RngStream::kBlocks];
      s.uniform_blocks(first, wide);
      for (int j = 0; j < RngStream::kBlocks; ++j) {
        const std::array<float, 4> one = s.uniform4(first + static_cast<uint64_t>(j));
        for (int i = 0; i < 4; ++i) ASSERT_EQ(wide[4 * j + i], one[i]) << "block " << first + j << " value " << i;
      }
    }
  }
}

// Each element is kept exactly when uniform(index) >= p, whatever the chunking the kernel uses.
TEST(Dropout, TheMaskIsTheStreamsUniformsElementByElement) {
  const RngStream rng{77, 5};
  for (const int64_t n : {1, 3, 64, 67, 5000, 70001}) {
    Tensor x = Tensor::empty({n});
    x.fill(2.0);
    Tensor y = Tensor::zeros({n});
    ops::dropout(x, 0.3, rng, y);
    const std::vector<double> v = y.to_doubles();
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(v[i] != 0.0, rng.uniform(static_cast<uint64_t>(i)) >= 0.3f) << "n " << n << " element " << i;
  }
  // Starts inside a Philox block (attention's tiles start anywhere), overwriting what was there.
  for (const uint64_t base : {1ull, 2ull, 3ull, 4ull, 130ull}) {
    const int64_t n = 203;
    std::vector<float> in(n, 2.0f), out(n, 1.0f);
    cpu::generic::apply_dropout<float>(n, base, in.data(), 0.3, rng, out.data());
    for (int64_t i = 0; i < n; ++i) {
      const bool kept = rng.uniform(base + static_cast<uint64_t>(i)) >= 0.3f;
      ASSERT_FLOAT_EQ(out[i], kept ? 2.0f / 0.7f : 0.0f) << "base " << base << " element " << i;
    }
  }
}

// split_columns gives each part its columns of every row of x (a fused Q·K·V product's outputs);
// 2 × 3 rows of 2 + 3 + 1 columns.
TEST(Copy, SplitColumnsGivesEachPartItsColumns) {
  const Tensor x = testing::random_tensor({2, 3, 6}, 33).to(DType::F32);
  const Tensor a = Tensor::zeros({2, 3, 2}), b = Tensor::zeros({2, 3, 3}), c = Tensor::zeros({2, 3, 1});
  ops::split_columns(x, {a, b, c});
  const std::vector<double> xs = x.to_doubles();
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(a.to_doubles()[r * 2 + j], xs[r * 6 + j]) << r << "," << j;
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(b.to_doubles()[r * 3 + j], xs[r * 6 + 2 + j]) << r << "," << j;
    EXPECT_EQ(c.to_doubles()[r], xs[r * 6 + 5]) << r;
  }
  testing::expect_error([&] { ops::split_columns(x, {a, b}); }, {"add up to 5", "has 6"});
  testing::expect_error([&] { ops::split_columns(x, {a, b, Tensor::zeros({5, 1})}); }, {"[5, 1]", "6 rows"});
}

TEST(Dropout, KeepsAboutOneMinusPAndScalesTheKept) {
  const int64_t n = 200001;  // odd: the last Philox block is partial
  Tensor x = Tensor::empty({n});
  x.fill(1.0);
  Tensor y = Tensor::zeros({n});
  ops::dropout(x, 0.25, RngStream{9, 1}, y);
  int64_t kept = 0;
  for (double v : y.to_doubles()) {
    if (v != 0.0) {
      ++kept;
      EXPECT_FLOAT_EQ(v, 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.75, 0.005);
}

// Runs `f` with 1 thread and with 2 threads and expects bit-identical tensors.
template <class F>
void expect_same_for_thread_counts(F f) {
  const int saved = num_threads();
  set_num_threads(1);
  const std::vector<double> one = f();
  set_num_threads(2);
  const std::vector<double> two = f();
  set_num_threads(saved);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(one[i], two[i]) << "element " << i;
}

TEST(Reproducible, DropoutLayerNormLossAttentionDoNotDependOnThreads) {
  const Tensor x = testing::random_tensor({300, 257}, 1).to(DType::F32);
  expect_same_for_thread_counts([&] {
    Tensor y = Tensor::zeros(x.shape());
    ops::dropout(x, 0.1, RngStream{3, 4}, y);
    return y.to_doubles();
  });
  expect_same_for_thread_counts([&] {
    Tensor y = Tensor::zeros(x.shape()), mean = Tensor::zeros({300}), rstd = Tensor::zeros({300});
    Tensor gamma = Tensor::empty({257}), beta = Tensor::zeros({257});
    gamma.fill(1.0);
    ops::layer_norm(x, gamma, beta, 1e-5, y, mean, rstd);
    Tensor dx = Tensor::zeros(x.shape()), dg = Tensor::zeros({257}), db = Tensor::zeros({257});
    ops::layer_norm_backward(x, x, gamma, mean, rstd, dx, dg, db);
    std::vector<double> all = dx.to_doubles();
    for (double v : dg.to_doubles()) all.push_back(v);
    return all;
  });
  expect_same_for_thread_counts([&] {
    std::vector<int32_t> t(300);
    for (int i = 0; i < 300; ++i) t[i] = (i * 37) % 257;
    Tensor targets = Tensor::from<int32_t>({300}, t), lse = Tensor::zeros({300});
    const ops::LossSum s = ops::cross_entropy(x, targets, {0.1, 0}, lse);
    Tensor d = Tensor::zeros(x.shape());
    ops::cross_entropy_backward(x, targets, lse, {0.1, 0}, 1.0 / s.tokens, d);
    std::vector<double> all = d.to_doubles();
    all.push_back(s.loss);
    return all;
  });
  expect_same_for_thread_counts([&] {
    const Tensor q = testing::random_tensor({4, 9, 16}, 2).to(DType::F32);
    ops::AttentionArgs args;
    args.heads = 2;
    args.causal = true;
    args.dropout = 0.1;
    args.rng = RngStream{1, 2};
    Tensor probs = Tensor::zeros({4, 2, 9, 9}), out = Tensor::zeros(q.shape());
    ops::attention(q, q, q, args, probs, out);
    return out.to_doubles();
  });
}

TEST(Adam, MatchesTheUpdateRuleWorkedOutByHand) {
  // One element, two steps, lr 0.1, β1 0.9, β2 0.98, ε 1e-9; gradients 0.5 then −1.
  Tensor p = Tensor::from<double>({1}, {1.0}), g = Tensor::from<double>({1}, {0.5});
  Tensor m = Tensor::zeros({1}, DType::F64), v = Tensor::zeros({1}, DType::F64);
  ops::AdamArgs args{0.1, 0.9, 0.98, 1e-9, 1};
  ops::adam_step(p, g, m, v, args);
  // m = 0.05, v = 0.005; m̂ = 0.5, v̂ = 0.25: p = 1 − 0.1 · 0.5 / (0.5 + 1e-9)
  EXPECT_NEAR(p.data<double>()[0], 1.0 - 0.1 * 0.5 / (0.5 + 1e-9), 1e-15);
  g.data<double>()[0] = -1.0;
  args.step = 2;
  ops::adam_step(p, g, m, v, args);
  const double m2 = 0.9 * 0.05 - 0.1, v2 = 0.98 * 0.005 + 0.02;
  const double expected = 1.0 - 0.1 * 0.5 / (0.5 + 1e-9) -
                          (0.1 / (1 - 0.81)) * m2 / (std::sqrt(v2) / std::sqrt(1 - 0.98 * 0.98) + 1e-9);
  EXPECT_NEAR(p.data<double>()[0], expected, 1e-14);
}

}  // namespace
}  // namespace tfm
