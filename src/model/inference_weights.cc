// The weights inference multiplies by, prepared once: int8 copies, packed copies, and each decoder
// self-attention's Q, K and V fused into one matrix; releasing the float32 originals.
#include "model/transformer.h"

#include <unordered_map>

#include "ops/copy.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/int8.h"
#include "ops/matmul.h"
#include "ops/packed.h"
#include "ops/positional.h"
#include "ops/screen.h"

namespace tfm {

bool Transformer::is_product_weight(int id) const {
  if (id == output_weight) return true;  // the output projection (when tied, its lookups stay float32)
  return params_.shape(id).rank() == 2 && params_.name(id).ends_with(".weight") && id != src_embedding &&
         id != tgt_embedding && id != positions_table && id != token_type_table;  // the tables are looked up
}

// Never the output projection: a shortlist's rows are selected from its float32 values
// (restrict_output), also when it is a matrix of its own (tie_output false).
bool Transformer::only_in_products(int id) const {
  return is_product_weight(id) && id != tgt_embedding && id != output_weight;
}

std::vector<int> Transformer::product_weights() const {
  std::vector<int> ids;
  for (int id = 0; id < params_.size(); ++id)
    if (only_in_products(id)) ids.push_back(id);
  ids.push_back(output_weight);  // last: while the others' copies are made, their plain values can go
  return ids;
}

std::pair<Tensor, Tensor> Transformer::fused_qkv(const MultiHeadAttention& a) const {
  const int64_t rows = a.q_proj.out + a.k_proj.out + a.v_proj.out;  // D + 2·KV
  const bool biased = a.q_proj.bias >= 0;
  // [D + 2KV, D], [D + 2KV] (undefined without biases), where the weights are
  Tensor w = Tensor::empty({rows, a.q_proj.in}, DType::F32, params_.device()),
         b = biased ? Tensor::empty({rows}, DType::F32, params_.device()) : Tensor();
  int64_t row = 0;
  for (const Linear* l : {&a.q_proj, &a.k_proj, &a.v_proj}) {
    w.rows(row, l->out).copy_from(params_.value(l->weight));
    if (biased) b.rows(row, l->out).copy_from(params_.value(l->bias));
    row += l->out;
  }
  return {w, b};
}

void Transformer::release_fused_parts(const MultiHeadAttention& a, PlainWeights plain) {
  if (plain == PlainWeights::kRelease)
    for (const Linear* l : {&a.q_proj, &a.k_proj, &a.v_proj}) params_.release(l->weight);
}

void Transformer::check_not_released(const char* what) const {
  TFM_CHECK(params_.released_count() == 0, what, ": ", params_.released_count(),
            " weights were already given back by an earlier pack_weights or quantize_int8 (PlainWeights::kRelease)");
}

void Transformer::screen_output() {
  TFM_CHECK(params_.dtype() == DType::F32 && params_.device() == Device::CPU,
            "screen_output: needs a float32 model on the CPU");
  screen_ = std::make_shared<Screen>();
}

void Transformer::quantize_int8(PlainWeights plain) {
  TFM_CHECK(params_.dtype() == DType::F32, "int8 quantization needs a float32 model");
  check_not_released("quantize_int8");
  int8_.clear();
  screen_.reset();  // the products are int8 already
  // Packed copies may still refer to the plain weights for some products: none may outlive them.
  if (plain == PlainWeights::kRelease) packed_.clear();
  for (const DecoderLayer& l : decoder) {
    auto [w, b] = fused_qkv(l.self_attn);  // [D + 2KV, D], [D + 2KV]
    ops::QuantizedMatrix q = ops::quantize_rows(w);  // per row: the same as each layer's own
    q.bias = b;
    ops::release_unpacked(q);
    int8_.emplace(fused_key(l.self_attn.q_proj.weight), std::move(q));
    release_fused_parts(l.self_attn, plain);
  }
  for (int id : product_weights()) {
    if (params_.released(id)) continue;  // a fused copy's part, kept only there
    ops::QuantizedMatrix q = ops::quantize_rows(params_.value(id));
    // One copy of each: the panels where they serve. The output projection keeps q as well (16 MB
    // for base where its panels serve, the 7-bit levels): a shortlist selects its rows from q
    // (decoding.cc).
    if (id != output_weight) ops::release_unpacked(q);
    int8_.emplace(id, std::move(q));
    if (plain == PlainWeights::kRelease && only_in_products(id)) params_.release(id);
  }
}

void Transformer::pack_weights(PlainWeights plain, ops::Precision products) {
  TFM_CHECK(params_.dtype() == DType::F32, "packed weights need a float32 model");
  check_not_released("pack_weights");
  packed_.clear();
  screen_.reset();
  packed_products_ = products;
  if (products == ops::Precision::kBf16) inference_products_ = products;
  // The feed-forward layers' first products take their activation with them, except gated ones
  // (whose activation acts on half of the product's columns, ops::gated).
  std::unordered_map<int, ops::Activation> activation;
  for (const EncoderLayer& l : encoder)
    if (!l.ffn.gated) activation.emplace(l.ffn.fc1.weight, l.ffn.activation);
  for (const DecoderLayer& l : decoder)
    if (!l.ffn.gated) activation.emplace(l.ffn.fc1.weight, l.ffn.activation);
  for (const DecoderLayer& l : decoder) {
    auto [w, b] = fused_qkv(l.self_attn);  // [D + 2KV, D], [D + 2KV]
    ops::PackedMatrix p = ops::pack_weight(w, b, ops::Activation::kNone, products);  // p.bias keeps b
    if (p.packed) p.weight = Tensor();  // every product takes the packed copy; w need not stay
    packed_.emplace(fused_key(l.self_attn.q_proj.weight), std::move(p));
    // In bf16 Q, K and V are also packed each on its own (below), so that the teacher-forced forward
    // pass (scoring) runs on packed copies alone once the plain weights are given back: 9 MB for base.
    if (products == ops::Precision::kFloat32) release_fused_parts(l.self_attn, plain);
  }
  for (int id : product_weights()) {
    if (params_.released(id)) continue;  // a fused copy's part, kept only there
    // A linear layer's bias joins its product (`<name>.weight` → `<name>.bias`); the output
    // projection's (a model's logits bias) is added after it, as for a shortlist's rows.
    const std::string& name = params_.name(id);
    const int bias = id == output_weight ? -1 : params_.find(name.substr(0, name.size() - 6) + "bias");
    const auto act = activation.find(id);
    ops::PackedMatrix p =
        ops::pack_weight(params_.value(id), bias >= 0 ? params_.value(bias) : Tensor(),
                         bias >= 0 && act != activation.end() ? act->second : ops::Activation::kNone, products);
    if (plain == PlainWeights::kRelease && only_in_products(id) && p.packed) {
      p.weight = Tensor();  // no product may fall back to it
      params_.release(id);
    }
    packed_.emplace(id, std::move(p));
  }
  // Greedy search without scores then skips most of the float32 output projection (ops/screen.h).
  if (products == ops::Precision::kFloat32 && params_.device() == Device::CPU &&
      config_.vocab_size >= kScreenMinVocabulary)
    screen_output();
}

void Transformer::use_bf16_products(PlainWeights plain) {
  if (ops::packs_bf16(params_.device()))
    pack_weights(plain, ops::Precision::kBf16);  // sets the inference products too
  else set_inference_products(ops::Precision::kBf16);
}

}  // namespace tfm
