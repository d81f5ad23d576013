#pragma once
// What a layer's forward or backward needs besides its inputs.
//
// Dimension letters, used in every shape comment of layers/ and model/:
//   B batch (sentences), S source length, T target length, L either length (a layer that serves
//   both; a decoding cache's positions), D model width (d_model), H heads, F feed-forward width
//   (d_ff), V vocabulary, N rows (all leading dims flattened).
// Decoding's: R hypothesis rows (sentences × beams), B_s the sentences whose encoder outputs they
//   read, C a decoding cache's rows per position (≥ R), V' a shortlist's vocabulary, K the beam size.
//   src/decode/search.h adds the search's own (k, B'', R'').
#include <functional>
#include <unordered_map>

#include "core/param_store.h"
#include "core/rng.h"
#include "ops/int8.h"
#include "ops/matmul.h"
#include "ops/packed.h"
#include "ops/weight.h"

namespace tfm {

// int8 copies of weight matrices, by parameter id (inference only; Transformer::quantize_int8).
using Int8Weights = std::unordered_map<int, ops::QuantizedMatrix>;
// Weight matrices packed once for inference's products, by parameter id (inference only; Transformer::pack_weights).
using PackedWeights = std::unordered_map<int, ops::PackedMatrix>;
// Both maps also hold fused products, several linear layers' weights side by side ([Σ out, in])
// with their biases: a decoder self-attention's Q, K and V as one product per decoding step. Their
// key is −1 − the first layer's weight id, never a parameter id.
inline int fused_key(int first_weight) { return -1 - first_weight; }

struct Context {
  const ParamStore* params = nullptr;  // values read, gradients accumulated (+=)
  Rng* rng = nullptr;                  // dropout's random streams; null: no dropout (inference)
  const Int8Weights* int8 = nullptr;   // when set, weight products with these run in int8
  const PackedWeights* packed = nullptr;  // when set (and no int8), products with these use the packing
  // What the float32 weight products (linear layers, the output projection; forward and backward)
  // round their inputs to: kBf16 for mixed-precision training (TrainOptions::bf16). Attention's
  // score products, the int8 and the packed ones ignore it.
  ops::Precision products = ops::Precision::kFloat32;
  // Mixed-precision training's bfloat16 activations (use_bf16_activations): a bfloat16 copy of every
  // parameter value, params->values()'s layout, that the weight products read. Undefined: each bf16
  // product rounds its float32 inputs itself.
  Tensor weights16 = {};

  // Training in bf16 with the activations between products in bfloat16 (TrainOptions::bf16): the
  // products bf16 (float32 sums), their weights read from one bfloat16 copy of the parameters made
  // here, and each activation a product reads rounded once where it is made (product_input), not by
  // every product that reads it. The same values as bf16 products of float32 inputs, computed once
  // (on the CPU the same bits; a GPU's cuBLASLt may choose other algorithms for the other
  // alignments). Call it again whenever the parameter values change (once per optimizer step).
  void use_bf16_activations() {
    TFM_CHECK(int8 == nullptr && packed == nullptr,
              "bfloat16 activations are for training, whose weights are plain: not with int8 or packed copies");
    products = ops::Precision::kBf16;
    weights16 = ops::to_bf16(params->values());
  }
  // An activation `x` as the products that read it take it: with use_bf16_activations, x rounded to
  // bfloat16 (a new tensor; what the layers keep for the backward pass), else x itself.
  Tensor product_input(const Tensor& x) const { return weights16.defined() ? ops::to_bf16(x) : x; }

  // Training, when set: told during a backward pass that the gradients of the parameters with ids
  // [first, end) are complete (nothing later in the pass adds to them), so that data-parallel
  // training can sum them over the ranks while the rest of the pass runs.
  const std::function<void(int first, int end)>* on_grads_done = nullptr;

  bool training() const { return rng != nullptr; }
  void grads_done(int first, int end) const {
    if (on_grads_done != nullptr && *on_grads_done) (*on_grads_done)(first, end);
  }
  Tensor value(int id) const { return params->value(id); }
  Tensor grad(int id) const { return params->grad(id); }
  const ops::QuantizedMatrix* int8_weight(int id) const {
    if (!int8) return nullptr;
    auto it = int8->find(id);
    return it == int8->end() ? nullptr : &it->second;
  }
  const ops::PackedMatrix* packed_weight(int id) const {
    if (!packed) return nullptr;
    auto it = packed->find(id);
    return it == packed->end() ? nullptr : &it->second;
  }
  // What products with parameter `id` multiply by (ops::product): its int8 copy, else its packed
  // copy, else its values in `products` (from weights16 where it is defined).
  ops::Weight weight(int id) const {
    const ops::Weight copy = copy_of(id);
    if (copy.defined()) return copy;
    if (weights16.defined())
      return ops::Weight::plain(weights16.rows(params->offset(id), params->shape(id).numel()).view(params->shape(id)),
                                products, params->name(id));
    return ops::Weight::plain(value(id), products, params->name(id));
  }
  // A fused product's weight (fused_key): its int8 or packed copy; none (not defined()) where the
  // context holds neither.
  ops::Weight fused_weight(int key) const { return copy_of(key); }

 private:
  ops::Weight copy_of(int key) const {
    const std::string_view name = key >= 0 ? std::string_view(params->name(key)) : std::string_view();
    if (const ops::QuantizedMatrix* q = int8_weight(key)) return ops::Weight::int8(*q, name);
    if (const ops::PackedMatrix* p = packed_weight(key)) return ops::Weight::packed(*p, name);
    return {};
  }
};

}  // namespace tfm
