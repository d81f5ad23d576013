#pragma once
// The server's two kinds of batcher jobs (serve/batcher.h): a /v1/translate request's sentences and
// a /v1/score request's pairs, and the keys that let requests with equal options share batches.
#include <cstdint>
#include <string>
#include <vector>

#include "serve/batcher.h"
#include "transformer/encoder.h"
#include "transformer/translator.h"

namespace tfm::serve {

// The key of a translate job: requests share batches only with the same model and equal options.
std::string translate_key(const std::string& model, const transformer::TranslateOptions& options);
// The key of a score job: every score request of a model may share batches.
std::string score_key(const std::string& model);
// The key of an embed job: requests share batches with the same model, pooling and normalization.
std::string embed_key(const std::string& model, const transformer::EmbedOptions& o);

// One /v1/translate request's sentences.
class TranslateJob : public Job {
 public:
  TranslateJob(std::string key, std::vector<int64_t> costs, const transformer::Translator& t,
               transformer::TranslateOptions o, std::vector<std::vector<int32_t>> sources)
      : Job(std::move(key), std::move(costs)), translator(t), options(o), sources(std::move(sources)),
        results(this->sources.size()) {}

  void run_batch(const std::vector<Item>& items) override;

  const transformer::Translator& translator;
  const transformer::TranslateOptions options;
  const std::vector<std::vector<int32_t>> sources;
  std::vector<transformer::Translation> results;
};

// One /v1/score request's sentence pairs.
class ScoreJob : public Job {
 public:
  ScoreJob(std::string key, std::vector<int64_t> costs, const transformer::Translator& t, int64_t max_input_tokens,
           std::vector<std::vector<int32_t>> sources, std::vector<std::vector<int32_t>> targets)
      : Job(std::move(key), std::move(costs)), scorer(t), max_input_tokens(max_input_tokens),
        sources(std::move(sources)), targets(std::move(targets)), results(this->sources.size()) {}

  void run_batch(const std::vector<Item>& items) override;

  const transformer::Translator& scorer;
  const int64_t max_input_tokens;
  const std::vector<std::vector<int32_t>> sources, targets;
  std::vector<transformer::Score> results;
};

// One /v1/embed request's texts, as the ids the encoder reads.
class EmbedJob : public Job {
 public:
  EmbedJob(std::string key, std::vector<int64_t> costs, const transformer::Encoder& e, transformer::EmbedOptions o,
           std::vector<std::vector<int32_t>> ids)
      : Job(std::move(key), std::move(costs)), encoder(e), options(o), ids(std::move(ids)), results(this->ids.size()) {}

  void run_batch(const std::vector<Item>& items) override;

  const transformer::Encoder& encoder;
  const transformer::EmbedOptions options;
  const std::vector<std::vector<int32_t>> ids;
  std::vector<transformer::Embedding> results;
};

}  // namespace tfm::serve
