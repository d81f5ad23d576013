// Language codes → token ids for the Translator (api/languages.h), with the errors a user sees.
#include "api/languages.h"

#include <string>

#include "core/error.h"

namespace transformer::api {

using tfm::cat;

namespace {

// "eng_Latn, deu_Latn, fra_Latn, … (202 in all)": the first few codes of the vocabulary.
std::string some_codes(const tfm::Vocab& vocab) {
  constexpr size_t kShown = 8;
  std::string list;
  const auto& all = vocab.languages();
  for (size_t i = 0; i < all.size() && i < kShown; ++i) list += cat(i ? ", " : "", all[i].first);
  if (all.size() > kShown) list += cat(", … (", all.size(), " in all)");
  return list;
}

int32_t token_of(const tfm::Vocab& vocab, const std::string& code, const char* which) {
  const int32_t id = vocab.language_id(code);
  TFM_CHECK(id >= 0, "unknown ", which, " language '", code, "': this model's language codes are ", some_codes(vocab));
  return id;
}

}  // namespace

LanguageTokens language_tokens(const tfm::Vocab* vocab, const LanguageOptions& o, bool text) {
  LanguageTokens t;
  const std::string given = o.source.empty() ? cat("target language '", o.target, "'")
                                             : cat("source language '", o.source, "'");
  if (vocab == nullptr || vocab->languages().empty()) {
    TFM_CHECK(o.empty(), vocab == nullptr ? "the translator was loaded without a vocabulary, which names the "
                                            "language codes: the "
                                          : "this model has no language codes: the ",
              given, " does not apply");
    return t;
  }
  TFM_CHECK(!o.target.empty(), "this model translates into ", vocab->languages().size(),
            " languages: give the target language (--target-lang; target_lang in Python and the server), one of ",
            some_codes(*vocab));
  t.target = token_of(*vocab, o.target, "target");
  if (text) {
    TFM_CHECK(!o.source.empty(), "this model's sources start with their language's token: give the source language "
              "(--source-lang; source_lang in Python and the server), one of ", some_codes(*vocab));
    t.source = token_of(*vocab, o.source, "source");
  } else {
    if (!o.source.empty())
      throw tfm::Error(cat("the source language '", o.source, "' does not apply to token ids, which are taken as "
                           "given: put its token (id ", token_of(*vocab, o.source, "source"),
                           ") first in each source instead"));
  }
  return t;
}

void add_language_tokens(const LanguageTokens& tokens, std::vector<std::vector<int32_t>>& sources,
                         std::vector<std::vector<int32_t>>& prefixes, int64_t max_tokens, std::vector<bool>* cut) {
  if (tokens.source >= 0)
    for (size_t i = 0; i < sources.size(); ++i) {
      if (sources[i].empty()) continue;  // an empty line has no translation
      sources[i].insert(sources[i].begin(), tokens.source);
      if (static_cast<int64_t>(sources[i].size()) > max_tokens) {
        sources[i].pop_back();
        if (cut) (*cut)[i] = true;
      }
    }
  if (tokens.target < 0) return;
  if (prefixes.empty()) prefixes.resize(sources.size());
  for (std::vector<int32_t>& p : prefixes) p.insert(p.begin(), tokens.target);
}

}  // namespace transformer::api
