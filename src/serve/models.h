#pragma once
// The models a server loaded, by the name requests give them: each one's translators (or, for a
// decoder-only model, its generator) and the description GET /v1/models returns.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/options.h"
#include "transformer/encoder.h"
#include "transformer/generator.h"
#include "transformer/translator.h"

namespace tfm::serve {

// A model and its translators: the decoding one, and one with the plain float32 weights for
// scoring (which needs them), loaded on the first /v1/score request.
struct LoadedModel {
  ModelSpec spec;
  transformer::TranslatorOptions options;
  std::unique_ptr<transformer::Translator> translator;
  std::mutex scorer_mutex;
  std::unique_ptr<transformer::Translator> scorer;
  nlohmann::json info;
  int64_t decoder_layers = 0, heads = 0;
  // The model's architecture: a decoder-only model has a generator instead of translators, an
  // encoder-only one only an encoder; each endpoint asks for what it needs, and another
  // architecture is a 400 naming it and the endpoint.
  std::string architecture = "encoder-decoder";
  std::unique_ptr<transformer::Generator> generator;
  std::mutex encoder_mutex;
  std::unique_ptr<transformer::Encoder> encoder;
  const transformer::Translator& translation(const char* endpoint) const;
  const transformer::Generator& generation(const char* endpoint) const;

  const transformer::Translator& score_translator();
  // /v1/embed's encoder: an encoder-only model's, or loaded on the first request for the encoder of
  // an encoder-decoder model.
  const transformer::Encoder& embed_encoder();
};

class Models {
 public:
  // Loads every model of `options` (errors name the model).
  explicit Models(const ServerOptions& options);

  // The model a request names; "" names the only one. HttpError 400 or 404 when there is none.
  LoadedModel& find(const std::string& name);
  size_t size() const { return models_.size(); }
  // GET /v1/models's list: each model's name, configuration and parameter count.
  nlohmann::json info() const;
  // The loaders' notes and warnings, one line each ("note: model 'x': …").
  std::vector<std::string> load_messages() const;

 private:
  std::string names() const;

  std::vector<std::unique_ptr<LoadedModel>> models_;
};

}  // namespace tfm::serve
