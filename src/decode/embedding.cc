// Embedding token sequences: batches by length, the encoder's hidden states, pooling and L2 norm.
#include "decode/embedding.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "decode/batching.h"

namespace tfm {

namespace {

using transformer::Pooling;

constexpr const char* kPoolingNames[] = {"mean", "cls", "last", "none", "max"};
constexpr int kPoolings = 5;

// Refuses a sequence the model cannot encode: empty, over the token limit, or past a learned
// position table.
void check_lengths(const Transformer& model, const std::vector<std::vector<int32_t>>& sequences,
                   const std::vector<std::vector<int32_t>>& types, int64_t max_tokens) {
  const ModelConfig& c = model.config();
  TFM_CHECK(types.empty() || types.size() == sequences.size(), "there are ", sequences.size(), " inputs but ",
            types.size(), " token type sequences (give one per input, or none)");
  for (size_t i = 0; i < sequences.size(); ++i) {
    const auto n = static_cast<int64_t>(sequences[i].size());
    const auto at = static_cast<long long>(i);
    if (n == 0) throw transformer::SentenceError(at, "there are no tokens to embed");
    if (n > max_tokens)
      throw transformer::SentenceError(at, cat("it has ", n, " tokens (specials included), more than the input "
                                                "token limit of ", max_tokens));
    if (c.positions == "learned" && c.max_positions > 0 && c.position_offset + n > c.max_positions)
      throw transformer::SentenceError(at, cat("it has ", n, " tokens, more than the model's ", c.max_positions,
                                                " learned positions allow (position offset ", c.position_offset, ")"));
    if (!types.empty() && types[i].size() != sequences[i].size())
      throw transformer::SentenceError(at, cat("it has ", n, " tokens but ", types[i].size(), " token types"));
  }
}

// One batch: rows `order[begin, end)` of the inputs, padded to the longest, encoded, each pooled.
struct BatchEmbedder {
  const Transformer& model;
  const std::vector<std::vector<int32_t>>& sequences;
  const std::vector<std::vector<int32_t>>& types;
  const transformer::EmbedOptions& o;
  const std::vector<size_t>& order;
  std::vector<transformer::Embedding>& out;

  void operator()(int64_t i) const {
    const size_t begin = static_cast<size_t>(i * o.batch_sentences);
    const size_t end = std::min(order.size(), begin + static_cast<size_t>(o.batch_sentences));
    const auto B = static_cast<int64_t>(end - begin);
    const auto S = static_cast<int64_t>(sequences[order[end - 1]].size());  // sorted: the last is the longest
    const ModelConfig& c = model.config();
    Tensor src = Tensor::empty({B, S}, DType::I32), lengths = Tensor::empty({B}, DType::I32), tt;
    src.fill(std::max<int32_t>(c.pad_id, 0));  // padded positions are masked whatever their id
    if (!types.empty()) {
      tt = Tensor::empty({B, S}, DType::I32);
      tt.fill(0);
    }
    for (int64_t b = 0; b < B; ++b) {
      const size_t k = order[begin + static_cast<size_t>(b)];
      std::copy(sequences[k].begin(), sequences[k].end(), src.data<int32_t>() + b * S);
      if (!types.empty()) std::copy(types[k].begin(), types[k].end(), tt.data<int32_t>() + b * S);
      lengths.data<int32_t>()[b] = static_cast<int32_t>(sequences[k].size());
    }
    const Device device = model.params().device();
    if (device != Device::CPU) {
      src = src.to_device(device), lengths = lengths.to_device(device);
      if (tt.defined()) tt = tt.to_device(device);
    }
    Tensor hidden = model.encode(model.context(), src, lengths, nullptr, tt);
    if (hidden.device() != Device::CPU) hidden = hidden.to_device(Device::CPU);
    TFM_CHECK(hidden.dtype() == DType::F32, "embedding needs the encoder's states in float32");
    const int64_t D = hidden.size(2);
    for (int64_t b = 0; b < B; ++b) {
      const size_t k = order[begin + static_cast<size_t>(b)];
      out[k].ids = sequences[k];
      pool_hidden(hidden.data<float>() + b * S * D, static_cast<int64_t>(sequences[k].size()), D, *o.pooling,
                  *o.normalize, out[k]);
    }
  }
};

}  // namespace

}  // namespace tfm

namespace transformer {

Pooling parse_pooling(std::string_view name) {
  for (int i = 0; i < tfm::kPoolings; ++i)
    if (name == tfm::kPoolingNames[i]) return static_cast<Pooling>(i);
  throw Error(tfm::cat("unknown pooling '", name, "' (mean, cls, last, max or none)"));
}

const char* pooling_name(Pooling p) {
  const int i = static_cast<int>(p);
  return i >= 0 && i < tfm::kPoolings ? tfm::kPoolingNames[i] : "?";
}

}  // namespace transformer

namespace tfm {

transformer::EmbedOptions resolve_embed_options(const ModelConfig& config, const transformer::EmbedOptions& options) {
  transformer::EmbedOptions o = options;
  if (!o.pooling) o.pooling = transformer::parse_pooling(config.pooling);
  if (!o.normalize) o.normalize = config.normalize_embeddings;
  return o;
}

void pool_hidden(const float* h, int64_t L, int64_t D, Pooling pooling, bool normalize, transformer::Embedding& out) {
  out.dim = D;
  out.rows = pooling == Pooling::kNone ? L : 1;
  out.values.assign(static_cast<size_t>(out.rows * D), 0.0f);
  if (pooling == Pooling::kNone) {
    std::copy(h, h + L * D, out.values.begin());
  } else if (pooling == Pooling::kMax) {
    float* top = out.values.data();
    std::copy(h, h + D, top);
    for (int64_t t = 1; t < L; ++t)
      for (int64_t d = 0; d < D; ++d) top[d] = std::max(top[d], h[t * D + d]);
  } else if (pooling == Pooling::kMean) {
    std::vector<double> sum(static_cast<size_t>(D), 0.0);  // in double: the same value whatever L
    for (int64_t t = 0; t < L; ++t)
      for (int64_t d = 0; d < D; ++d) sum[static_cast<size_t>(d)] += h[t * D + d];
    for (int64_t d = 0; d < D; ++d) out.values[static_cast<size_t>(d)] = static_cast<float>(sum[static_cast<size_t>(d)] / L);
  } else {
    const int64_t t = pooling == Pooling::kCls ? 0 : L - 1;
    std::copy(h + t * D, h + (t + 1) * D, out.values.begin());
  }
  if (!normalize) return;
  for (int64_t r = 0; r < out.rows; ++r) {
    float* row = out.values.data() + r * D;
    double squares = 0;
    for (int64_t d = 0; d < D; ++d) squares += static_cast<double>(row[d]) * row[d];
    const double norm = std::sqrt(squares);
    if (norm > 0)
      for (int64_t d = 0; d < D; ++d) row[d] = static_cast<float>(row[d] / norm);
  }
}

std::vector<transformer::Embedding> embed_ids(const Transformer& model, const std::vector<std::vector<int32_t>>& sequences,
                                              const std::vector<std::vector<int32_t>>& types,
                                              const transformer::EmbedOptions& options) {
  options.validate();
  const transformer::EmbedOptions o = resolve_embed_options(model.config(), options);
  TFM_CHECK(model.config().has_encoder(), "a ", model.config().architecture,
            " model has no encoder to embed with (embedding takes an encoder-only or encoder-decoder model)");
  check_lengths(model, sequences, types, o.max_input_tokens);
  std::vector<size_t> lengths(sequences.size());
  for (size_t i = 0; i < sequences.size(); ++i) lengths[i] = sequences[i].size();
  const std::vector<size_t> order = order_by_length(lengths);
  std::vector<transformer::Embedding> out(sequences.size());
  const int64_t batches = order.empty() ? 0 : (static_cast<int64_t>(order.size()) - 1) / o.batch_sentences + 1;
  const BatchEmbedder embed{model, sequences, types, o, order, out};
  run_batches(batches, parallel_batches(model, 0, batches), embed);
  return out;
}

}  // namespace tfm
