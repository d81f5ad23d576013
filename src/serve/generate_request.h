#pragma once
// A /v1/generate request read into the library's GenerationOptions (every default from the struct,
// each field by its name there), its prompts cleaned, encoded and checked, and the JSON of its answer.
// Every error is an HttpError 400 naming the field and value.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/options.h"
#include "serve/request.h"
#include "transformer/generator.h"

namespace tfm::serve {

// The body of a /v1/generate request, its fields checked against the known ones.
Fields generate_fields(const std::string& body);

// What a /v1/generate request asks for beyond its prompts.
struct GenerateRequest {
  transformer::GenerationOptions options;
  bool stream = false;  // "stream": server-sent events, one per token, then the whole result
};

// The request's options within the server's limits (--max-beam; --max-input-tokens for
// max_new_tokens too); options that do not fit together (sampling with a beam, top-p without
// sampling, streaming a beam search) are refused.
GenerateRequest generate_request(const Fields& f, const ServerOptions& limits);

// The prompts encoded as the library encodes a text prompt (BOS, then the cleaned text's tokens;
// an empty prompt is BOS alone), each one's cost in the batcher (prompt and new tokens), and the
// warnings of its cleaning. A prompt over --max-input-tokens tokens is refused, naming the limit, and
// so is one that max_new_tokens would take past `positions`, the positions a learned table gives
// the model (0: no limit).
struct GenerateInputs {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int64_t> costs;
  std::vector<std::vector<std::string>> warnings;
};
GenerateInputs generate_inputs(const transformer::Generator& g, const std::vector<std::string>& texts,
                               const transformer::GenerationOptions& o, const ServerOptions& limits,
                               int64_t positions);

// One prompt's entry of the answer: the best continuation's text (with include_prompt the prompt
// first), its score with return_scores, the n-best list when n_best > 1, and the warnings.
nlohmann::json generation_json(const transformer::Generator& g, const transformer::Generation& r,
                               const transformer::GenerationOptions& o, const std::vector<std::string>& warnings);

}  // namespace tfm::serve
