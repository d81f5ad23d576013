// The Hugging Face tokenizer kind of Vocab: built from tokenizer.json or BERT's vocab.txt, saved as
// vocabulary.json naming that file beside it, and its ids and text as data/hf_tokenizer.h computes.
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_text.h"
#include "data/vocab_hf.h"
#include "io/atomic_file.h"

namespace tfm {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<int32_t> hf_encode(const HfTokenizer& t, const std::string& text) { return t.encode(text, false); }

std::string hf_decode(const HfTokenizer& t, const std::vector<int32_t>& ids) {
  std::vector<int32_t> known;  // ids past the tokenizer's (a padded embedding's) have no text
  known.reserve(ids.size());
  for (int32_t id : ids)
    if (id >= 0 && id < t.size()) known.push_back(id);
  return t.decode(known, true);
}

std::string hf_piece(const HfTokenizer& t, int32_t id) { return id < t.size() ? t.id_to_token(id) : std::string(); }

int32_t hf_piece_id(const HfTokenizer& t, const std::string& piece) { return t.token_to_id(piece); }

std::string hf_fingerprint_text(const HfTokenizerFiles& f) {
  return cat("hf ", f.tokenizer_json.empty() ? "wordpiece" : "tokenizer.json", " lowercase ", f.lowercase,
             " strip_accents ", f.strip_accents, " chinese ", f.chinese_chars, " size ", f.size, "\n");
}

HfTokenizer build_hf_tokenizer(const HfTokenizerFiles& f, const std::string& what) {
  const std::optional<bool> strip = f.strip_accents < 0 ? std::nullopt : std::optional<bool>(f.strip_accents == 1);
  HfTokenizer t = !f.tokenizer_json.empty()
                      ? HfTokenizer::from_json(f.tokenizer_json, what, f.size)
                      : HfTokenizer::from_wordpiece_vocab(f.wordpiece_vocab, f.lowercase, strip, f.chinese_chars, what);
  TFM_CHECK(f.size >= t.size(), what, ": the tokenizer has ", t.size(), " ids but the vocabulary is to have ", f.size,
            "; the model's vocabulary must hold all of them");
  return t;
}

void save_hf_tokenizer(const HfTokenizerFiles& f, const std::string& dir, const std::string& vocabulary_file) {
  const bool wordpiece = f.tokenizer_json.empty();
  json j = {{"format", kHfTokenizerFormat}, {"version", 1}, {"size", f.size}};
  if (wordpiece) {
    j["wordpiece_vocab"] = "vocab.txt";
    j["lowercase"] = f.lowercase;
    j["strip_accents"] = f.strip_accents < 0 ? json(nullptr) : json(f.strip_accents == 1);
    j["chinese_chars"] = f.chinese_chars;
  } else {
    j["tokenizer"] = "tokenizer.json";
  }
  const std::string& bytes = wordpiece ? f.wordpiece_vocab : f.tokenizer_json;
  write_file_atomic((fs::path(dir) / (wordpiece ? "vocab.txt" : "tokenizer.json")).string(),
                    [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
  write_file_atomic((fs::path(dir) / vocabulary_file).string(),
                    [&](std::ostream& out) { out << j.dump(1) << "\n"; });
}

namespace {
// A field of vocabulary.json, of the expected JSON type, or an error naming the file and the key.
const json& vocab_field(const json& j, const char* key, json::value_t type, const std::string& path) {
  TFM_CHECK(j.contains(key), "'", path, "': a Hugging Face tokenizer's vocabulary has no '", key, "'");
  const json& v = j[key];
  const bool ok = v.type() == type || (type == json::value_t::number_integer && v.is_number_integer());
  TFM_CHECK(ok, "'", path, "': '", key, "' has the wrong type: ", json_quote(v));
  return v;
}
}  // namespace

HfTokenizerFiles load_hf_tokenizer_files(const std::string& path, const std::string& text) {
  const json j = parse_json(text, cat("'", path, "'"));
  TFM_CHECK(j.value("version", json()) == 1, "'", path, "': version ", json_quote(j.value("version", json())),
            " is not supported (1 is)");
  const fs::path dir = fs::path(path).parent_path();
  HfTokenizerFiles f;
  f.size = vocab_field(j, "size", json::value_t::number_integer, path).get<int64_t>();
  std::string file;
  if (j.contains("tokenizer")) {
    file = vocab_field(j, "tokenizer", json::value_t::string, path).get<std::string>();
    f.tokenizer_json = read_file((dir / file).string());
  } else {
    file = vocab_field(j, "wordpiece_vocab", json::value_t::string, path).get<std::string>();
    f.wordpiece_vocab = read_file((dir / file).string());
    f.lowercase = vocab_field(j, "lowercase", json::value_t::boolean, path).get<bool>();
    f.chinese_chars = vocab_field(j, "chinese_chars", json::value_t::boolean, path).get<bool>();
    const json& strip = j.value("strip_accents", json());
    TFM_CHECK(strip.is_null() || strip.is_boolean(), "'", path, "': 'strip_accents' must be true, false or null, got ",
              json_quote(strip));
    f.strip_accents = strip.is_null() ? -1 : strip.get<bool>() ? 1 : 0;
  }
  return f;
}

}  // namespace tfm
