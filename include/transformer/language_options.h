#pragma once
// The languages of a multilingual translator (M2M-100, NLLB-200 imported from Hugging Face): codes
// as its vocabulary names them (NLLB's "eng_Latn", M2M-100's "en"). The command line's
// --source-lang and --target-lang, Python's source_lang= and target_lang=, and the server's
// "source_lang" and "target_lang" request fields set them.
#include <string>

namespace transformer {

struct LanguageOptions {
  // The source's language: its token starts each source text, as the model's tokenizer puts it
  // (token ids are taken as given, so it does not apply to them). "": none.
  std::string source;
  // The language to translate into: its token is forced as the first output token (Hugging Face's
  // forced_bos_token_id), so every hypothesis's ids start with it; the text leaves it out. A model
  // with language codes needs it. "": none.
  std::string target;
  bool empty() const { return source.empty() && target.empty(); }
};

}  // namespace transformer
