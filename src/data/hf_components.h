#pragma once
// The parts of a Hugging Face tokenizer (data/hf_tokenizer.h) as tokenizer.json describes them:
// normalizers, pre-tokenizers, models, post-processors and decoders, each built from its JSON
// object by a make_* function that refuses what it does not implement, naming the field.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/unicode_text.h"

namespace tfm::hf {

// Where a JSON value is, for errors: the file and the path inside it ("model.merges[3]").
struct Where {
  std::string file;
  std::string path;
  Where operator[](const std::string& key) const { return {file, path.empty() ? key : path + "." + key}; }
  Where operator[](size_t index) const { return {file, path + "[" + std::to_string(index) + "]"}; }
  [[noreturn]] void fail(const std::string& problem) const;
};

// Field readers: absent or null gives the fallback; a wrong type is an error naming the field.
const nlohmann::json& required(const nlohmann::json& obj, const std::string& key, const Where& where);
bool get_bool(const nlohmann::json& obj, const std::string& key, bool fallback, const Where& where);
std::string get_string(const nlohmann::json& obj, const std::string& key, const std::string& fallback,
                       const Where& where);
int64_t get_int(const nlohmann::json& obj, const std::string& key, int64_t fallback, const Where& where);
std::string type_of(const nlohmann::json& obj, const Where& where);  // "type", required

// A piece of text between the pre-tokenization steps; `at_start` when it begins the input.
struct Piece {
  std::string text;
  bool at_start = false;
};

// How a split keeps what a pattern matched (the library's SplitDelimiterBehavior).
enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
Behavior parse_behavior(const nlohmann::json& value, const Where& where);
// `text` cut by `matches` ([begin, end) byte ranges, ordered) as `behavior` says; empty parts dropped.
std::vector<Piece> split_piece(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                               Behavior behavior, bool invert = false);
// A "pattern" object: {"String": s} (literal) or {"Regex": r}.
unicode::Regex make_pattern(const nlohmann::json& pattern, const Where& where);

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string text) const = 0;
};
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec, const Where& where);  // null → nullptr
std::unique_ptr<Normalizer> make_bert_normalizer(bool clean_text, bool chinese_chars, bool strip_accents,
                                                 bool lowercase);

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual std::vector<Piece> pre_tokenize(std::vector<Piece> pieces) const = 0;
};
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec, const Where& where);

// A model's vocabulary: tokens by id (holes are "") and ids by token.
struct Vocabulary {
  std::vector<std::string> by_id;
  std::unordered_map<std::string, int32_t> ids;
  int32_t find(const std::string& token) const {
    const auto it = ids.find(token);
    return it == ids.end() ? -1 : it->second;
  }
};
// A {"token": id} object; ids must be distinct and below 2^31.
Vocabulary read_vocabulary(const nlohmann::json& vocab, const Where& where);
Vocabulary vocabulary_of(std::vector<std::string> pieces, const Where& where);

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized word.
  virtual void tokenize(std::string_view word, std::vector<int32_t>& ids) const = 0;
  virtual const std::vector<std::string>& vocabulary() const = 0;  // by id; "" for a hole
  virtual int32_t token_to_id(std::string_view token) const = 0;   // −1 when absent
  virtual int32_t unk_id() const = 0;                               // −1 when none
};
std::unique_ptr<Model> make_model(const nlohmann::json& spec, const Where& where);
std::unique_ptr<Model> make_wordpiece(const nlohmann::json& spec, const Where& where);
std::unique_ptr<Model> make_bpe(const nlohmann::json& spec, const Where& where);
// A WordPiece model over pieces given by id (BERT's vocab.txt).
std::unique_ptr<Model> make_wordpiece(std::vector<std::string> pieces, const std::string& unk, const Where& where);

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& spec, const Where& where);

// The post-processor of one sequence: the ids it puts before and after.
struct PostProcessor {
  std::vector<int32_t> prefix, suffix;
};
PostProcessor make_post_processor(const nlohmann::json& spec, const Where& where);

// Rust's char::is_whitespace over a UTF-8 string's characters, as the library's helpers use it.
std::string_view strip_white_space(std::string_view text, bool left, bool right);

}  // namespace tfm::hf
