#pragma once
// Loading model files for the public API: what every entry point that reads a model shares.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/vocab.h"
#include "io/safetensors.h"
#include "model/transformer.h"
#include "transformer/translator.h"

namespace transformer::api {

// Loads a model file, verifying its checksum when `verify`; a file that records none (format
// version 1) loads with a note in `notes`, unless verification is off.
std::unique_ptr<tfm::Transformer> load_model_noting(const tfm::SafetensorsFile& file, bool verify, LoadNotes& notes);

// The fingerprint of the vocabulary the file's model was trained with ("" if not recorded).
std::string vocab_fingerprint(const tfm::SafetensorsFile& file);

// The vocabulary of a model: `vocab` or, when empty, vocab.model beside the model file; refused
// when missing, of another size than the model's, or another fingerprint than the one the file
// records (`fingerprint`); a model that records none loads with a warning in `notes`.
tfm::Vocab load_matching_vocab(const std::string& model_path, const std::string& vocab, const tfm::Transformer& model,
                               const std::string& fingerprint, LoadNotes& notes);

// Moves the model to `device` and makes the inference copies of its weights that `weights` asks
// for (the plain float32 ones given back); `work` names the use in a memory error ("translating").
void prepare_inference_weights(tfm::Transformer& model, TranslatorOptions::Weights weights, const std::string& device,
                               const char* work = "translating");

// A text's tokens, at least `max_tokens` + 1 of them when it has that many, without tokenizing all
// of an enormous one: tokenizing takes about 250 bytes of memory per byte of text (a 20 MB line took
// 4.8 GB to keep 1024 of its tokens, and a 200 MB one was killed by the kernel with the lines before
// it untranslated). Text over kBytesPerToken bytes per allowed token is cut at a character's start
// and tokenized; the cut doubles until it gives more than `max_tokens` tokens (text that is mostly
// spaces, which the tokenizer drops) or reaches kMaxGrowth times its first size. `cut`: whether text
// was left unread.
inline constexpr size_t kBytesPerToken = 64, kMaxGrowth = 16;
std::vector<int32_t> encode_bounded(const tfm::Vocab& vocab, const std::string& text, int64_t max_tokens,
                                    tfm::Side side, bool& cut);

// Space-separated token ids of `line` (input line `line_number`): a word that is not an integer is
// an Error naming the line and the word; each id goes through check(id, word) (an id out of range
// for long long is −1), which throws naming it.
std::vector<int32_t> parse_id_line(std::string_view line, int64_t line_number,
                                   const std::function<void(long long id, const std::string& word)>& check);

}  // namespace transformer::api
