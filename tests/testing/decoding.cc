#include "testing/decoding.h"

#include <cmath>
#include <functional>
#include <numeric>

#include "decode/search.h"
#include "model/batch.h"

namespace tfm::testing {

ModelConfig tiny_decoding_config(int64_t vocab) {
  ModelConfig c = model_preset("tiny");
  c.vocab_size = vocab;
  c.d_model = 16;
  c.heads = 2;
  c.d_ff = 24;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  return c;
}

std::unique_ptr<Transformer> scaled_model(int64_t vocab, uint64_t seed, DType dtype, double scale, bool pre_norm) {
  ModelConfig c = tiny_decoding_config(vocab);
  c.pre_norm = pre_norm;
  auto m = std::make_unique<Transformer>(c, dtype);
  m->init_parameters(seed);
  const Tensor e = m->params().value(m->tgt_embedding);
  std::vector<double> v = e.to_doubles();
  for (double& x : v) x *= scale;
  e.copy_from(Tensor::from<double>(e.shape(), v).to(dtype));
  return m;
}

std::vector<std::vector<double>> forced_logits(const Transformer& m, const std::vector<int32_t>& source,
                                               const std::vector<int32_t>& target) {
  const Batch batch = make_batch({source}, {target}, m.config());
  const Tensor logits = m.forward(m.context(), batch, nullptr).to(DType::F64);
  const int64_t V = m.config().vocab_size;
  std::vector<std::vector<double>> rows;
  for (int64_t t = 0; t <= static_cast<int64_t>(target.size()); ++t)
    rows.emplace_back(logits.data<double>() + t * V, logits.data<double>() + (t + 1) * V);
  return rows;
}

double sequence_score(const Transformer& m, const std::vector<int32_t>& source, const std::vector<int32_t>& target,
                      const std::vector<int32_t>& allowed) {
  const auto rows = forced_logits(m, source, target);
  std::vector<int32_t> vocab = allowed;
  if (vocab.empty()) {
    vocab.resize(static_cast<size_t>(m.config().vocab_size));
    std::iota(vocab.begin(), vocab.end(), 0);
  }
  double total = 0;
  for (size_t t = 0; t < rows.size(); ++t) {
    double max = -INFINITY, sum = 0;
    for (int32_t v : vocab) max = std::max(max, rows[t][v]);
    for (int32_t v : vocab) sum += std::exp(rows[t][v] - max);
    const int32_t y = t < target.size() ? target[t] : m.config().eos_id;
    total += rows[t][y] - max - std::log(sum);
  }
  return total;
}

Best exhaustive_best(const Transformer& m, const std::vector<int32_t>& source, const std::vector<int32_t>& start,
                     int64_t max_length, double alpha, const std::vector<int32_t>& tokens) {
  Best best{{}, -INFINITY};
  std::vector<int32_t> seq = start;
  std::function<void()> visit = [&] {
    const double normalized =
        sequence_score(m, source, seq) / length_penalty(static_cast<int64_t>(seq.size()) + 1, alpha);
    if (normalized > best.normalized) best = {seq, normalized};
    if (static_cast<int64_t>(seq.size()) + 1 >= max_length) return;
    for (int32_t v : tokens) {
      seq.push_back(v);
      visit();
      seq.pop_back();
    }
  };
  visit();
  return best;
}

}  // namespace tfm::testing
