// The vocabularies of M2M-100 and NLLB-200 folders as a piece vocabulary: sentencepiece.bpe.model
// segments the text, the tokenizer's files give each piece its id (fairseq's <s> <pad> </s> <unk>
// first), and the language codes are pieces of that table.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/json_text.h"
#include "import/hf_m2m100.h"
#include "io/atomic_file.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// M2M100Tokenizer's language code lists (its "language_codes" setting); a code's token is __code__,
// its id follows vocab.json's entries in this order.
const std::map<std::string, std::vector<std::string>>& m2m100_code_lists() {
  static const std::map<std::string, std::vector<std::string>> lists = {
      {"m2m100", {"af", "am", "ar", "ast", "az", "ba", "be", "bg", "bn", "br", "bs", "ca", "ceb", "cs", "cy", "da", "de",
                  "el", "en", "es", "et", "fa", "ff", "fi", "fr", "fy", "ga", "gd", "gl", "gu", "ha", "he", "hi", "hr",
                  "ht", "hu", "hy", "id", "ig", "ilo", "is", "it", "ja", "jv", "ka", "kk", "km", "kn", "ko", "lb",
                  "lg", "ln", "lo", "lt", "lv", "mg", "mk", "ml", "mn", "mr", "ms", "my", "ne", "nl", "no", "ns",
                  "oc", "or", "pa", "pl", "ps", "pt", "ro", "ru", "sd", "si", "sk", "sl", "so", "sq", "sr", "ss",
                  "su", "sv", "sw", "ta", "th", "tl", "tn", "tr", "uk", "ur", "uz", "vi", "wo", "xh", "yi", "yo",
                  "zh", "zu"}},
      {"wmt21", {"en", "ha", "is", "ja", "cs", "ru", "zh", "de"}},
  };
  return lists;
}

// The most "madeupword" pieces fairseq's dictionary may end with (M2M-100's have 8); they may lie
// past the embedding's rows.
constexpr int64_t kMaxMadeupWords = 1000;

// The pieces by id and what the tokenizer says of them.
struct Table {
  std::vector<std::string> pieces;
  Vocab::Languages languages;
  std::vector<int32_t> special;  // ids decoding skips besides the languages
  size_t optional_tail = 0;      // last pieces that need no row of the embedding (M2M-100's madeupwords)
  json tokenizer_config;         // tokenizer_config.json, or an empty object
  int64_t max_ids = 0;           // ids beyond config.json's vocab_size and the madeupwords are refused
  fs::path config_path;
};

// A special token's text in tokenizer_config.json: a string or an object with "content".
std::string token_name(const Table& t, const char* key, const char* fallback) {
  const json& c = t.tokenizer_config;
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (c[key].is_string()) return c[key].get<std::string>();
  TFM_CHECK(c[key].is_object() && c[key].contains("content") && c[key]["content"].is_string(), "import hf: ",
            t.config_path.string(), ": '", key, "' must be a string or an object with a \"content\" string, got ",
            json_quote(c[key]));
  return c[key]["content"].get<std::string>();
}

// Places `piece` at `id`, which must not be taken.
void place(Table& t, int64_t id, const std::string& piece, const fs::path& from) {
  TFM_CHECK(id >= 0 && id < t.max_ids, "import hf: ", from.string(), ": the id of '", piece, "' is ", id,
            ", outside the model's vocabulary (config.json's vocab_size ", t.max_ids - kMaxMadeupWords, ")");
  if (static_cast<int64_t>(t.pieces.size()) <= id) t.pieces.resize(static_cast<size_t>(id) + 1);
  std::string& slot = t.pieces[static_cast<size_t>(id)];
  TFM_CHECK(slot.empty() || slot == piece, "import hf: ", from.string(), ": id ", id, " is given to both '", slot,
            "' and '", piece, "'");
  slot = piece;
}

// A JSON object of pieces and their ids (vocab.json, tokenizer.json's model.vocab).
void place_all(Table& t, const json& vocab, const fs::path& from) {
  TFM_CHECK(vocab.is_object(), "import hf: ", from.string(), ": the vocabulary is not a JSON object of pieces and ids");
  for (const auto& [piece, id] : vocab.items()) {
    TFM_CHECK(id.is_number_integer(), "import hf: ", from.string(), ": the id of '", piece, "' is ", json_quote(id));
    place(t, id.get<int64_t>(), piece, from);
  }
}

// NllbTokenizer(Fast): tokenizer.json's model.vocab and added_tokens; the language codes are its
// special added tokens other than the named ones (<s>, </s>, <mask>, ...), code = token.
void nllb_table(const HfFolderInfo& f, Table& t) {
  const fs::path path = f.dir / "tokenizer.json";
  TFM_CHECK(fs::exists(path), "import hf: ", f.dir.string(), " has no tokenizer.json (an NllbTokenizer's table of ids)");
  TFM_CHECK(!hf_field<bool>(t.tokenizer_config, "legacy_behaviour", false, t.config_path), "import hf: ",
            t.config_path.string(), ": 'legacy_behaviour' true (the source language code after </s>) is not supported");
  const json tokenizer = read_hf_json(path);
  TFM_CHECK(tokenizer.contains("model") && tokenizer["model"].contains("vocab"), "import hf: ", path.string(),
            " has no model.vocab");
  place_all(t, tokenizer["model"]["vocab"], path);
  std::set<std::string> named;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token", "mask_token", "sep_token", "cls_token"})
    named.insert(token_name(t, key, ""));
  for (const char* fallback : {"<s>", "</s>", "<unk>", "<pad>", "<mask>"}) named.insert(fallback);
  const json added = tokenizer.value("added_tokens", json::array());
  TFM_CHECK(added.is_array(), "import hf: ", path.string(), ": added_tokens is not a list");
  for (const json& a : added) {
    TFM_CHECK(a.is_object() && a.contains("id") && a["id"].is_number_integer() && a.contains("content") &&
                  a["content"].is_string(),
              "import hf: ", path.string(), ": an added token is not {\"id\": integer, \"content\": string}: ",
              json_quote(a));
    const std::string content = a["content"].get<std::string>();
    const auto id = a["id"].get<int64_t>();
    place(t, id, content, path);
    if (a.value("special", false)) {
      if (named.count(content)) t.special.push_back(static_cast<int32_t>(id));
      else t.languages.emplace_back(content, static_cast<int32_t>(id));
    }
  }
}

// M2M100Tokenizer: vocab.json, then the language codes' __code__ tokens, then fairseq's
// "madeupword" tokens. tokenizer_config.json's added_tokens_decoder, where it lists an id, must agree.
void m2m100_table(const HfFolderInfo& f, Table& t) {
  const fs::path path = f.dir / "vocab.json";
  place_all(t, read_hf_json(path), path);
  const auto n = static_cast<int64_t>(t.pieces.size());
  const std::string list = hf_field<std::string>(t.tokenizer_config, "language_codes", "m2m100", t.config_path);
  const auto codes = m2m100_code_lists().find(list);
  TFM_CHECK(codes != m2m100_code_lists().end(), "import hf: ", t.config_path.string(), ": language_codes '", list,
            "' is not supported (m2m100, wmt21 are)");
  for (const std::string& code : codes->second) {
    const auto id = static_cast<int32_t>(n + static_cast<int64_t>(t.languages.size()));
    place(t, id, cat("__", code, "__"), path);
    t.languages.emplace_back(code, id);
  }
  const int64_t madeup = hf_field<int64_t>(t.tokenizer_config, "num_madeup_words", 8, t.config_path);
  TFM_CHECK(madeup >= 0 && madeup < kMaxMadeupWords, "import hf: ", t.config_path.string(), ": num_madeup_words ",
            madeup, " is not in [0, ", kMaxMadeupWords, ")");
  for (int64_t i = 0; i < madeup; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "madeupword%04d", static_cast<int>(i));
    t.special.push_back(static_cast<int32_t>(t.pieces.size()));
    place(t, static_cast<int64_t>(t.pieces.size()), name, path);
  }
  t.optional_tail = static_cast<size_t>(madeup);  // no token names them: an embedding may lack their rows
  const json listed = t.tokenizer_config.value("added_tokens_decoder", json::object());
  for (const auto& [id, token] : listed.items()) {
    const std::string content = token.is_object() ? token.value("content", std::string()) : std::string();
    TFM_CHECK(!id.empty() && id.size() < 10 && id.find_first_not_of("0123456789") == std::string::npos, "import hf: ",
              t.config_path.string(), ": added_tokens_decoder has the key '", id, "', not an id");
    const int64_t i = std::stoll(id);
    TFM_CHECK(i >= 0 && i < static_cast<int64_t>(t.pieces.size()) && t.pieces[static_cast<size_t>(i)] == content,
              "import hf: ", t.config_path.string(), ": added_tokens_decoder gives id ", id, " to '", content,
              "', where the tokenizer's vocab.json and language codes put '",
              i >= 0 && i < static_cast<int64_t>(t.pieces.size()) ? t.pieces[static_cast<size_t>(i)] : "", "'");
  }
}

// The table has one piece per id of the embedding: a gap is refused, and ids past the tokenizer's
// (rows no token names, as NLLB-200's last two) get placeholder pieces decoding skips.
void fill(Table& t, const ModelConfig& c, const fs::path& dir, std::vector<std::string>& notes) {
  for (; t.optional_tail > 0 && static_cast<int64_t>(t.pieces.size()) > c.vocab_size; --t.optional_tail) {
    t.pieces.pop_back();
    t.special.pop_back();
  }
  const auto n = static_cast<int64_t>(t.pieces.size());
  TFM_CHECK(n <= c.vocab_size, "import hf: the tokenizer in ", dir.string(), " has ", n,
            " ids but config.json's vocab_size is ", c.vocab_size);
  for (size_t i = 0; i < t.pieces.size(); ++i)
    TFM_CHECK(!t.pieces[i].empty(), "import hf: the tokenizer in ", dir.string(), " gives no piece id ", i);
  for (int64_t i = n; i < c.vocab_size; ++i) {
    t.pieces.push_back(cat("<unnamed ", i, ">"));
    t.special.push_back(static_cast<int32_t>(i));
  }
  if (n < c.vocab_size)
    notes.push_back(cat("ids ", n, " to ", c.vocab_size - 1, " of the embedding name no token; translations skip them"));
}

// The id of the special piece under `key`, which config.json's `field` (if any) must equal.
int32_t special_id(const Table& t, const char* key, const char* fallback, const fs::path& dir) {
  const std::string name = token_name(t, key, fallback);
  for (size_t i = 0; i < t.pieces.size(); ++i)
    if (t.pieces[i] == name) return static_cast<int32_t>(i);
  throw Error(cat("import hf: the tokenizer in ", dir.string(), " has no piece '", name, "' (its ", key, ")"));
}
}  // namespace

Vocab m2m100_vocabulary(const HfFolderInfo& f, ModelConfig& c, std::vector<std::string>& notes) {
  Table t;
  t.max_ids = c.vocab_size + kMaxMadeupWords;
  t.config_path = f.dir / "tokenizer_config.json";
  t.tokenizer_config = fs::exists(t.config_path) ? read_hf_json(t.config_path) : json::object();
  const std::string kind = hf_field<std::string>(t.tokenizer_config, "tokenizer_class", "", t.config_path);
  const bool nllb = kind.rfind("Nllb", 0) == 0 || (kind.empty() && !fs::exists(f.dir / "vocab.json"));
  TFM_CHECK(nllb || kind.empty() || kind == "M2M100Tokenizer", "import hf: ", t.config_path.string(),
            ": tokenizer_class '", kind, "' is not supported (M2M100Tokenizer, NllbTokenizer, NllbTokenizerFast are)");
  if (nllb) nllb_table(f, t);
  else m2m100_table(f, t);
  fill(t, c, f.dir, notes);
  c.unk_id = special_id(t, "unk_token", "<unk>", f.dir);
  for (const auto& [key, fallback, id, field] :
       {std::tuple{"eos_token", "</s>", c.eos_id, "eos_token_id"}, {"pad_token", "<pad>", c.pad_id, "pad_token_id"}}) {
    const int32_t theirs = special_id(t, key, fallback, f.dir);
    TFM_CHECK(theirs == id, "import hf: the tokenizer's ", key, " is id ", theirs, " but config.json's ", field, " is ",
              id);
  }
  t.special.insert(t.special.end(), {c.eos_id, c.pad_id, c.unk_id, special_id(t, "bos_token", "<s>", f.dir)});
  const fs::path spm = f.dir / "sentencepiece.bpe.model";
  TFM_CHECK(fs::exists(spm), "import hf: ", f.dir.string(),
            " has no sentencepiece.bpe.model, the SentencePiece model that segments the text (M2M-100 and NLLB "
            "folders on the hub have it beside the tokenizer's files)");
  try {
    const std::string bytes = read_file(spm.string());
    Vocab v = Vocab::from_pieces(std::move(t.pieces), bytes, bytes, c.unk_id, t.special, cat("'", spm.string(), "'"),
                                 cat("'", spm.string(), "'"));
    v.set_languages(std::move(t.languages));
    return v;
  } catch (const Error& e) {
    throw Error(cat("import hf: ", f.dir.string(), ": ", e.what()));
  }
}

}  // namespace tfm
