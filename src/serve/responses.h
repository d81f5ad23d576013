#pragma once
// The JSON the server answers with: a translation (with its hypotheses, scores and attention as
// the request asked) and a score, each with the warnings of its cleaning.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/request.h"
#include "transformer/translator.h"

namespace tfm::serve {

// One text's entry of a /v1/translate answer.
nlohmann::json translation_json(const transformer::Translator& t, const transformer::Translation& r,
                                const TranslateRequest& request, const std::vector<std::string>& warnings);

// One text's entry of a /v1/embed answer: its vector, or (pooling none) an array of its tokens'.
// per_token: pooling none.
nlohmann::json embedding_json(const transformer::Embedding& e, bool per_token);

// One pair's entry of a /v1/score answer.
nlohmann::json score_json(const transformer::Score& s, const std::vector<std::string>& warnings);

}  // namespace tfm::serve
