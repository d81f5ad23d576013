#pragma once
// The Hugging Face tokenizer kind of Vocab (data/vocab.h): its ids, text and files.
#include <cstdint>
#include <string>
#include <vector>

#include "data/hf_tokenizer.h"
#include "data/vocab.h"

namespace tfm {

// vocabulary.json's "format" for a Hugging Face tokenizer.
inline constexpr const char* kHfTokenizerFormat = "huggingface-tokenizer";

std::vector<int32_t> hf_encode(const HfTokenizer& t, const std::string& text);  // without special tokens
std::string hf_decode(const HfTokenizer& t, const std::vector<int32_t>& ids);   // special tokens skipped
std::string hf_piece(const HfTokenizer& t, int32_t id);
int32_t hf_piece_id(const HfTokenizer& t, const std::string& piece);
// The options of a vocab.txt tokenizer and the size, as text the fingerprint covers.
std::string hf_fingerprint_text(const HfTokenizerFiles& files);

}  // namespace tfm
