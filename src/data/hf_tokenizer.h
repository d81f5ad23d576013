#pragma once
// A Hugging Face tokenizer (the `tokenizers` library's tokenizer.json): normalizer, pre-tokenizer,
// model (WordPiece or BPE, byte-level or with byte fallback), added tokens, post-processor and
// decoder, computing the ids and text Hugging Face computes. A component this program does not
// implement is refused when loading, naming its type; nothing is skipped silently.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfm {

class HfTokenizer {
 public:
  // tokenizer.json's text; `what` names it in errors ("'DIR/tokenizer.json'"). An id of the model's
  // vocabulary of max_ids or more (the model's embedding has fewer rows) is refused before a table
  // of that many ids is made.
  static HfTokenizer from_json(const std::string& json_text, const std::string& what,
                               int64_t max_ids = std::numeric_limits<int32_t>::max());
  // BERT's vocab.txt (one piece per line, ids by line) with the BertTokenizer options of
  // tokenizer_config.json: what a folder without tokenizer.json holds.
  static HfTokenizer from_wordpiece_vocab(const std::string& vocab_txt, bool lowercase,
                                          std::optional<bool> strip_accents, bool chinese_chars,
                                          const std::string& what);

  HfTokenizer(HfTokenizer&&) noexcept;
  HfTokenizer& operator=(HfTokenizer&&) noexcept;
  ~HfTokenizer();

  // The ids of a text (UTF-8), with or without the post-processor's special tokens
  // (tokenizer.encode(text, add_special_tokens=...).ids). Ill-formed UTF-8 is read as Python's
  // bytes.decode(errors="replace") reads it: each maximal ill-formed part is one U+FFFD. NUL is text.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  // The tokenizers library's Tokenizer.decode(ids, skip_special_tokens=...) (not transformers'
  // decode, which may add clean_up_tokenization_spaces); throws naming an id out of range.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
  // The ids the post-processor puts before and after one sequence (BERT: [CLS] and [SEP];
  // Llama 2: <s> and none; GPT-2: none and none).
  const std::vector<int32_t>& prefix_ids() const;
  const std::vector<int32_t>& suffix_ids() const;
  int64_t size() const;                              // the highest id + 1, added tokens included
  std::string id_to_token(int32_t id) const;         // "" when no token has the id
  int32_t token_to_id(std::string_view token) const;  // −1 when none
  bool is_special(int32_t id) const;                 // an added token marked special
  std::optional<int32_t> unk_id() const;             // the model's unknown token, if it has one

 private:
  struct Impl;
  explicit HfTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfm
