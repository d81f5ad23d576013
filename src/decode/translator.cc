#include "decode/translator.h"

#include <algorithm>
#include <numeric>

namespace tfm {

std::vector<Translation> translate_ids(const Transformer& model, const std::vector<std::vector<int32_t>>& sources,
                                       const TranslateOptions& o) {
  o.search.validate();
  TFM_CHECK(o.batch_sentences >= 1, "batch size must be >= 1 sentence, got ", o.batch_sentences);
  TFM_CHECK(o.max_input_tokens >= 1, "the input token limit must be >= 1, got ", o.max_input_tokens);
  std::vector<Translation> out(sources.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < sources.size(); ++i) {
    out[i].source_ids = sources[i];
    if (static_cast<int64_t>(sources[i].size()) > o.max_input_tokens) {
      out[i].source_ids.resize(static_cast<size_t>(o.max_input_tokens));
      out[i].truncated = true;
    }
    if (!out[i].source_ids.empty()) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return out[a].source_ids.size() < out[b].source_ids.size(); });
  for (size_t begin = 0; begin < order.size(); begin += static_cast<size_t>(o.batch_sentences)) {
    const size_t end = std::min(order.size(), begin + static_cast<size_t>(o.batch_sentences));
    std::vector<std::vector<int32_t>> batch;
    for (size_t i = begin; i < end; ++i) batch.push_back(out[order[i]].source_ids);
    if (o.search.beam_size == 1 && o.search.n_best == 1) {
      std::vector<Hypothesis> best = greedy_search(model, batch, o.search);
      for (size_t i = begin; i < end; ++i) out[order[i]].hypotheses = {std::move(best[i - begin])};
    } else {
      std::vector<std::vector<Hypothesis>> nbest = beam_search(model, batch, o.search);
      for (size_t i = begin; i < end; ++i) out[order[i]].hypotheses = std::move(nbest[i - begin]);
    }
  }
  return out;
}

std::vector<Translation> translate_lines(const Transformer& model, const Vocab& vocab,
                                         const std::vector<std::string>& lines, const TranslateOptions& o) {
  std::vector<std::vector<int32_t>> ids;
  ids.reserve(lines.size());
  for (const std::string& line : lines) ids.push_back(vocab.encode(line));
  return translate_ids(model, ids, o);
}

}  // namespace tfm
