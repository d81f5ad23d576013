// Translating many sentences (decode/translator.h): batches decoded at the same time, one thread
// each, give what one batch at a time on every thread gives, in input order, for float32, packed
// and int8 weights, greedy and beam search; errors inside a batch come back as errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/threads.h"
#include "decode/translator.h"
#include "model/batch.h"
#include "model/checkpoint.h"
#include "ops/cpu/isa.h"
#include "ops/cpu/kernels.h"
#include "ops/int8.h"
#include "ops/packed.h"
#include "decode/shortlist.h"
#include "testing/decoding.h"
#include "testing/errors.h"
#include "testing/fixture.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

// 40 sources of 1–9 ids of the fixture's vocabulary, lengths mixed so that sorting reorders them.
std::vector<std::vector<int32_t>> sources(int64_t vocab) {
  std::vector<std::vector<int32_t>> out;
  for (int32_t i = 0; i < 40; ++i) {
    std::vector<int32_t> s;
    for (int32_t j = 0; j < 1 + (i * 7) % 9; ++j) s.push_back(4 + (i * 13 + j * 5) % static_cast<int32_t>(vocab - 4));
    out.push_back(s);
  }
  out[17].clear();  // an empty line stays empty
  return out;
}

// Sets the thread count for a test and puts the previous one back, also when an assertion returns early.
struct Threads {
  int before = num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(before); }
};

void expect_same(const std::vector<Translation>& a, const std::vector<Translation>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "sentence " << i);
    EXPECT_EQ(a[i].source_ids, b[i].source_ids);
    ASSERT_EQ(a[i].hypotheses.size(), b[i].hypotheses.size());
    for (size_t h = 0; h < a[i].hypotheses.size(); ++h) {
      EXPECT_EQ(a[i].hypotheses[h].tokens, b[i].hypotheses[h].tokens);
      EXPECT_NEAR(a[i].hypotheses[h].score, b[i].hypotheses[h].score, 1e-4);
    }
  }
}

TEST(Translator, ParallelBatchesTranslateLikeOneBatchAtATime) {
  const Threads threads(2);
  for (const std::string weights : {"float32", "packed", "int8"}) {
    const auto model = load_model(std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors");
    if (weights == "packed") model->pack_weights();
    if (weights == "int8") model->quantize_int8();
    const auto src = sources(model->config().vocab_size);
    for (int64_t beam : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << weights << " weights, beam " << beam);
      TranslateOptions o;
      o.batch_sentences = 3;  // 13 batches of the 39 non-empty sources
      o.search.beam_size = beam;
      o.search.n_best = beam;
      o.parallel_batches = 1;
      const std::vector<Translation> one = translate_ids(*model, src, o);
      ASSERT_TRUE(one[17].hypotheses.empty());
      ASSERT_FALSE(one[0].hypotheses.empty());
      for (int64_t parallel : {2, 0}) {  // 0: automatic, 2 batches at once on 2 threads here
        o.parallel_batches = parallel;
        expect_same(one, translate_ids(*model, src, o));
        EXPECT_EQ(num_threads(), 2);  // the workers' one-thread setting stays with them
      }
      // Each sentence as it comes out alone: the input order is kept.
      o.parallel_batches = 2;
      const std::vector<Translation> together = translate_ids(*model, src, o);
      for (size_t i : {0u, 5u, 39u}) expect_same({together[i]}, translate_ids(*model, {src[i]}, o));
    }
  }
}

// Translation gives the float32 weights back once their packed or int8 copies exist: it translates
// exactly as a model that keeps them, and the released model refuses what needs them.
TEST(Translator, ReleasedPlainWeightsTranslateTheSame) {
  const std::string path = std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors";
  for (const std::string weights : {"packed", "int8"}) {
    SCOPED_TRACE(weights);
    const auto kept = load_model(path), released = load_model(path);
    using P = Transformer::PlainWeights;
    for (auto& [model, plain] : {std::pair{kept.get(), P::kKeep}, std::pair{released.get(), P::kRelease}}) {
      if (weights == "packed") model->pack_weights(plain);
      else model->quantize_int8(plain);
    }
    const auto src = sources(kept->config().vocab_size);
    for (int64_t beam : {1, 3}) {
      TranslateOptions o;
      o.batch_sentences = 7;
      o.search.beam_size = beam;
      expect_same(translate_ids(*kept, src, o), translate_ids(*released, src, o));
    }
    const ParamStore& p = released->params();
    const int fc1 = p.find("decoder.layers.0.ffn.fc1.weight");
    ASSERT_GE(fc1, 0);
    // Given back where a copy replaces it: always in int8; packed only where packing pays at this
    // level (below the AVX2 level the layers' products run on the plain weights, ops/cpu/packed.cc).
    const ops::PackedMatrix* packed = released->context().packed_weight(fc1);
    EXPECT_EQ(p.released(fc1), weights == "int8" || (packed && packed->packed)) << cpu::name(cpu::isa());
    if (weights == "packed" && cpu::packing_pays(released->config().d_ff, released->config().d_model)) {
      EXPECT_TRUE(p.released(fc1));
    }
    EXPECT_FALSE(p.released(released->tgt_embedding));  // looked up as well as multiplied by
    EXPECT_FALSE(p.released(p.find("decoder.layers.0.ffn.fc1.bias")));
    testing::expect_error([&] { save_model(*released, testing::temp_path("released.safetensors")); },
                          {"released"});
    // Whole targets at once need each self-attention's own Q, K and V, kept only fused.
    const Batch batch = make_batch({src[0]}, {src[1]}, released->config());
    testing::expect_error([&] { released->forward(released->context(), batch, nullptr); },
                          {"decoder.layers.0.self_attn.", "released"});
    EXPECT_NO_THROW(kept->forward(kept->context(), batch, nullptr));
  }
}

// A model with an output projection of its own (tie_output false, as imported Marian and Hugging
// Face models can have): packed, int8 or bf16-packed with the plain weights given back, it
// translates as the model that keeps them, also with a shortlist, whose rows are selected from the
// float32 projection (which is therefore never given back).
TEST(Translator, UntiedOutputProjectionTranslatesAfterARelease) {
  ModelConfig c = testing::tiny_decoding_config(13);
  c.tie_output = false;
  const std::string path = testing::temp_path("untied.safetensors");
  {
    Transformer m(c);
    m.init_parameters(7);
    save_model(m, path);
  }
  const Shortlist shortlist = Shortlist::build({{4}}, {{4, 6, 9, 11}}, 13, {.per_source = 0, .frequent = 4}, "");
  const std::vector<std::vector<int32_t>> src = {{4, 5, 6, 7}, {8, 9}, {10, 4, 11, 5, 12, 6}, {7}};
  using P = Transformer::PlainWeights;
  for (const std::string weights : {"packed", "int8", "bf16"}) {
    if (weights == "bf16" && !ops::packs_bf16(Device::CPU)) continue;  // plain bf16 products: nothing released
    SCOPED_TRACE(weights);
    const auto kept = load_model(path), released = load_model(path);
    ASSERT_NE(kept->output_weight, kept->tgt_embedding);
    for (auto& [model, plain] : {std::pair{kept.get(), P::kKeep}, std::pair{released.get(), P::kRelease}}) {
      if (weights == "packed") model->pack_weights(plain);
      else if (weights == "int8") model->quantize_int8(plain);
      else model->pack_weights(plain, ops::Precision::kBf16);
    }
    EXPECT_FALSE(released->params().released(released->output_weight));
    for (int64_t beam : {1, 3}) {
      TranslateOptions o;
      o.search.beam_size = beam;
      expect_same(translate_ids(*kept, src, o), translate_ids(*released, src, o));
      const std::vector<Translation> listed = translate_ids(*released, src, o, &shortlist);
      expect_same(translate_ids(*kept, src, o, &shortlist), listed);
      for (const Translation& t : listed)
        for (int32_t id : t.hypotheses.at(0).tokens) EXPECT_TRUE(id == 4 || id == 6 || id == 9 || id == 11) << id;
    }
  }
}

// A decoder self-attention's fused Q·K·V product against its three own products on the same
// input: the same per-row quantization and int32 sums in int8 (so exactly equal), float32
// rounding when packed; and its own bias is the one added (with a bias of its own, int8 refuses
// a second).
TEST(Translator, FusedQkvProductMatchesThreeProducts) {
  const std::string path = std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors";
  for (const std::string weights : {"packed", "int8"}) {
    SCOPED_TRACE(weights);
    const auto model = load_model(path);
    if (weights == "packed") model->pack_weights();
    else model->quantize_int8();
    const Context ctx = model->context();
    ASSERT_FALSE(model->decoder.empty());
    const MultiHeadAttention& a = model->decoder.back().self_attn;
    const int key = fused_key(a.q_proj.weight);
    ASSERT_TRUE(weights == "packed" ? ctx.packed_weight(key) != nullptr : ctx.int8_weight(key) != nullptr);
    const Tensor x = testing::random_tensor({3, 1, model->config().d_model}, 21).to(DType::F32);
    const auto [q, k, v] = a.project_qkv(ctx, x);
    const Tensor own[] = {a.q_proj.forward(ctx, x), a.k_proj.forward(ctx, x), a.v_proj.forward(ctx, x)};
    const Tensor fused[] = {q, k, v};
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(fused[i].shape(), own[i].shape());
      const std::vector<double> f = fused[i].to_doubles(), o = own[i].to_doubles();
      for (size_t j = 0; j < f.size(); ++j) {
        if (weights == "int8") ASSERT_EQ(f[j], o[j]) << i << "," << j;
        else ASSERT_NEAR(f[j], o[j], 1e-5 * (1 + std::abs(o[j]))) << i << "," << j;
      }
    }
    if (weights == "int8") {
      Tensor y = Tensor::empty({3, 1, 3 * model->config().d_model});
      testing::expect_error([&] { ops::matmul_int8(x, *ctx.int8_weight(key), y, Tensor::zeros({y.size(2)})); },
                            {"a bias given for a matrix with its own"});
    }
  }
}

// Decoding writes a step's keys and values straight into its cache (project_qkv's destinations):
// the same values as project_qkv's own tensors, in the memory given, for plain, packed and int8
// weights; a destination of another shape is refused.
TEST(Translator, ProjectQkvWritesIntoGivenDestinations) {
  const std::string path = std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors";
  for (const std::string weights : {"plain", "packed", "int8"}) {
    SCOPED_TRACE(weights);
    const auto model = load_model(path);
    if (weights == "packed") model->pack_weights();
    if (weights == "int8") model->quantize_int8();
    const Context ctx = model->context();
    const MultiHeadAttention& a = model->decoder.front().self_attn;
    const int64_t D = model->config().d_model;
    const Tensor x = testing::random_tensor({4, 1, D}, 23).to(DType::F32);
    const auto [q, k, v] = a.project_qkv(ctx, x);
    Tensor slab = Tensor::empty({2, 6, D});  // [L, R, D]: position 1, rows 0..3
    slab.fill(99.0);
    const Tensor k_out = slab.view({12, D}).rows(6, 4).view({4, 1, D});
    const Tensor v_out = Tensor::empty({4, 1, D});
    const auto [q2, k2, v2] = a.project_qkv(ctx, x, k_out, v_out);
    EXPECT_EQ(k2.raw(), k_out.raw());
    EXPECT_EQ(v2.raw(), v_out.raw());
    EXPECT_EQ(q2.to_doubles(), q.to_doubles());
    EXPECT_EQ(k_out.to_doubles(), k.to_doubles());
    EXPECT_EQ(v_out.to_doubles(), v.to_doubles());
    const std::vector<double> all = slab.to_doubles();
    for (int64_t i = 0; i < 6 * D; ++i) ASSERT_EQ(all[i], 99.0) << "position 0 written at " << i;
    for (int64_t i = 10 * D; i < 12 * D; ++i) ASSERT_EQ(all[i], 99.0) << "rows past the 4 written at " << i;
    testing::expect_error([&] { a.project_qkv(ctx, x, Tensor::empty({3, 1, D}), Tensor::empty({3, 1, D})); },
                          {"project_qkv", "destination"});
  }
}

// Once weights are given back, a second packing or quantization (which would need them) refuses.
TEST(Translator, NoSecondCopiesAfterARelease) {
  const auto model = load_model(std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors");
  model->pack_weights(Transformer::PlainWeights::kRelease);
  const int released = model->params().released_count();
  EXPECT_GT(released, 0);
  testing::expect_error([&] { model->quantize_int8(); }, {"quantize_int8", std::to_string(released).c_str(), "already"});
  testing::expect_error([&] { model->pack_weights(); }, {"pack_weights", "already given back"});
  EXPECT_TRUE(model->packed());  // the first copies stay usable
  TranslateOptions o;
  EXPECT_FALSE(translate_ids(*model, {{5, 6, 7}}, o)[0].hypotheses.empty());
}

TEST(Translator, ErrorsInsideParallelBatchesAreReported) {
  const Threads threads(2);
  const auto model = load_model(std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors");
  auto src = sources(model->config().vocab_size);
  src[33] = {4, 5, static_cast<int32_t>(model->config().vocab_size + 7)};  // an id beyond the vocabulary
  TranslateOptions o;
  o.batch_sentences = 3;
  o.parallel_batches = 2;
  testing::expect_error([&] { translate_ids(*model, src, o); }, {std::to_string(model->config().vocab_size + 7).c_str()});
  o.parallel_batches = -1;
  testing::expect_error([&] { translate_ids(*model, sources(model->config().vocab_size), o); },
                        {"parallel batches", "-1"});
}

// The memory check before decoding asks the device the model is on: the host's memory on the CPU,
// the GPU backend's free memory for a model on a GPU (here a simulated backend that reports 1 MB,
// far below what 40 sentences with beam 4 need). The estimate is refused before anything runs there.
class SmallDevice final : public DeviceMemory {
 public:
  std::shared_ptr<void> allocate(size_t bytes) override { return std::shared_ptr<void>(std::malloc(bytes), std::free); }
  void zero(void* data, size_t bytes) override { std::memset(data, 0, bytes); }
  void fill(void*, DType, int64_t, double) override { FAIL() << "not expected"; }
  void copy(void* dst, Device, const void* src, Device, size_t bytes) override { std::memcpy(dst, src, bytes); }
  std::string describe() const override { return "simulated, 1 MB free"; }
  int64_t available_bytes() override { return 1 << 20; }
};

TEST(Translator, MemoryCheckAsksTheModelsDevice) {
  const auto model = load_model(std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors");
  TranslateOptions o;
  o.search.beam_size = 4;
  const auto src = sources(model->config().vocab_size);
  EXPECT_EQ(translate_ids(*model, src, o).size(), src.size());  // the host has the memory
  SmallDevice dev;
  register_device_memory(Device::CUDA, &dev);
  struct Unregister {
    ~Unregister() { register_device_memory(Device::CUDA, nullptr); }
  } unregister;
  model->params().to_device(Device::CUDA, /*gradients=*/false);
  testing::expect_error([&] { translate_ids(*model, src, o); },
                        {"translating would need about", "more than the limit of ",
                         "80% of the cuda device's memory available now", "beam 4"});
  model->params().to_device(Device::CPU, /*gradients=*/false);
}

}  // namespace
}  // namespace tfm
