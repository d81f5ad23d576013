#pragma once
// Helpers of the importers (src/import): converting a tensor's values, and the parameters of the
// model's layers, named as this project names them, for each format to name its own tensors.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace tfm {

// values (row-major, of `shape`) as a float32 tensor, transposed when asked (a matrix stored
// [in, out] by Marian → [out, in] here). Throws naming `what` on a NaN or an infinity.
Tensor import_matrix(const std::vector<float>& values, const std::vector<int64_t>& shape, bool transpose,
                     const std::string& what);

// The blocks of an encoder or decoder layer, in the order they run (cross-attention: the decoder's).
enum class LayerBlock { kSelfAttention, kSelfAttentionNorm, kCrossAttention, kCrossAttentionNorm, kFfn, kFfnNorm };

// One parameter of an encoder or decoder layer: its name here and its place, from which a format
// names its own tensor.
struct LayerParam {
  std::string name;   // this project's, e.g. "decoder.layers.2.cross_attn.q_proj.weight"
  bool decoder;       // in the decoder, else in the encoder
  int64_t layer;      // from 0
  LayerBlock block;
  std::string part;   // an attention's "q", "k", "v" or "out"; the feed-forward's "fc1" or "fc2"; "" in a norm
  bool weight;        // the weight (a norm's gain), else the bias
};

// Visits every parameter of the encoder's layers, then of the decoder's, each layer's blocks in
// the order they run, weight before bias.
void for_each_layer_param(const ModelConfig& config, const std::function<void(const LayerParam&)>& visit);

}  // namespace tfm
