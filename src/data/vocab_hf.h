#pragma once
// The Hugging Face tokenizer kind of Vocab (data/vocab.h): the files that define it (tokenizer.json,
// or BERT's vocab.txt with its options), how vocabulary.json names them, and its ids and text.
#include <cstdint>
#include <string>
#include <vector>

#include "data/hf_tokenizer.h"

namespace tfm {

// What defines a Hugging Face tokenizer: tokenizer.json's text, or BERT's vocab.txt with the
// options of its tokenizer_config.json.
struct HfTokenizerFiles {
  std::string tokenizer_json;  // "" for a WordPiece vocab.txt
  std::string wordpiece_vocab;
  bool lowercase = true;
  int strip_accents = -1;      // -1: as lowercase (null in tokenizer_config.json), 0 or 1
  bool chinese_chars = true;
  int64_t size = 0;            // the ids the model has: at least the tokenizer's (embeddings are often padded)
};

// vocabulary.json's "format" for a Hugging Face tokenizer.
inline constexpr const char* kHfTokenizerFormat = "huggingface-tokenizer";

// The tokenizer the files define; `what` names them in errors. Throws if it has more ids than `size`.
HfTokenizer build_hf_tokenizer(const HfTokenizerFiles& files, const std::string& what);
// Writes `dir`/vocabulary.json (`vocabulary_file`) and the tokenizer's file beside it, atomically.
void save_hf_tokenizer(const HfTokenizerFiles& files, const std::string& dir, const std::string& vocabulary_file);
// The files a vocabulary.json (at `path`, its text `text`) names, read from beside it.
HfTokenizerFiles load_hf_tokenizer_files(const std::string& path, const std::string& text);
// The options of a vocab.txt tokenizer and the size, as text the fingerprint covers.
std::string hf_fingerprint_text(const HfTokenizerFiles& files);

std::vector<int32_t> hf_encode(const HfTokenizer& t, const std::string& text);  // without special tokens
std::string hf_decode(const HfTokenizer& t, const std::vector<int32_t>& ids);   // special tokens skipped
std::string hf_piece(const HfTokenizer& t, int32_t id);
int32_t hf_piece_id(const HfTokenizer& t, const std::string& piece);

}  // namespace tfm
