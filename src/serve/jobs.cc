// The server's batcher jobs (translate, score, embed): each decodes a batch of sentences gathered from the jobs of one key,
// and writes each sentence's result back into its own job.
#include "serve/jobs.h"

#include <cstring>

#include "core/error.h"

namespace tfm::serve {

std::string translate_key(const std::string& model, const transformer::TranslateOptions& options) {
  const transformer::SearchOptions& search = options.search;
  // The length penalty by its exact bits (printed with 6 digits, 0.1234561 and 0.1234564 were one
  // key and decoded alike).
  uint64_t penalty_bits = 0;
  std::memcpy(&penalty_bits, &search.length_penalty, sizeof penalty_bits);
  return cat(model, "\ttranslate\t", search.beam_size, "\t", search.n_best, "\t", penalty_bits, "\t",
             search.record_attention, "\t", search.return_scores, "\t", options.languages.target);
}

std::string score_key(const std::string& model) { return cat(model, "\tscore"); }

void TranslateJob::run_batch(const std::vector<Item>& items) {
  std::vector<std::vector<int32_t>> batch;
  batch.reserve(items.size());
  for (const Item& item : items) batch.push_back(static_cast<TranslateJob&>(*item.job).sources[item.index]);
  transformer::TranslateOptions o = options;
  o.batch_sentences = static_cast<int64_t>(batch.size());
  o.parallel_batches = 1;
  std::vector<transformer::Translation> out = translator.translate_ids(batch, o);
  for (size_t i = 0; i < items.size(); ++i)
    static_cast<TranslateJob&>(*items[i].job).results[items[i].index] = std::move(out[i]);
}

void ScoreJob::run_batch(const std::vector<Item>& items) {
  std::vector<std::vector<int32_t>> src, tgt;
  for (const Item& item : items) {
    const auto& job = static_cast<ScoreJob&>(*item.job);
    src.push_back(job.sources[item.index]);
    tgt.push_back(job.targets[item.index]);
  }
  transformer::ScoreOptions o;
  o.batch_sentences = static_cast<int64_t>(src.size());
  o.max_input_tokens = max_input_tokens;
  std::vector<transformer::Score> out = scorer.score_ids(src, tgt, o);
  for (size_t i = 0; i < items.size(); ++i)
    static_cast<ScoreJob&>(*items[i].job).results[items[i].index] = out[i];
}

std::string embed_key(const std::string& model, const transformer::EmbedOptions& o) {
  // o is resolved (Encoder::resolve): pooling and normalize are set.
  return cat(model, "\tembed\t", transformer::pooling_name(o.pooling.value()), "\t", o.normalize.value());
}

void EmbedJob::run_batch(const std::vector<Item>& items) {
  std::vector<std::vector<int32_t>> batch;
  batch.reserve(items.size());
  for (const Item& item : items) batch.push_back(static_cast<EmbedJob&>(*item.job).ids[item.index]);
  transformer::EmbedOptions o = options;
  o.batch_sentences = static_cast<int64_t>(batch.size());
  std::vector<transformer::Embedding> out = encoder.embed_ids(batch, o);
  for (size_t i = 0; i < items.size(); ++i)
    static_cast<EmbedJob&>(*items[i].job).results[items[i].index] = std::move(out[i]);
}

}  // namespace tfm::serve
