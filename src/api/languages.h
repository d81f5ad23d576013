#pragma once
// A multilingual translator's language options (transformer/language_options.h) as token ids: the
// source language's token put first in each source text, the target language's forced first in
// each translation (a one-token target prefix).
#include <cstdint>
#include <vector>

#include "data/vocab.h"
#include "transformer/language_options.h"

namespace transformer::api {

struct LanguageTokens {
  int32_t source = -1;  // -1: none
  int32_t target = -1;
};

// The tokens of `options` in `vocab` (nullptr: the translator has no vocabulary). `text`: the
// sources are text (the source language applies), else token ids (taken as given). Refused, naming
// the value: a code the vocabulary lacks (listing some it has), any code for a model without
// language codes or without its vocabulary, and a model with language codes without the target
// language (or, for text, the source language).
LanguageTokens language_tokens(const tfm::Vocab* vocab, const LanguageOptions& options, bool text);

// Puts the source token first in each non-empty source (keeping at most max_tokens, `cut` set
// for a source that loses its last token) and the target token first in each target prefix, one
// per source (made when `prefixes` is empty).
void add_language_tokens(const LanguageTokens& tokens, std::vector<std::vector<int32_t>>& sources,
                         std::vector<std::vector<int32_t>>& prefixes, int64_t max_tokens, std::vector<bool>* cut);

}  // namespace transformer::api
