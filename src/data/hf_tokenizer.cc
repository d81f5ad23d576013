// A Hugging Face tokenizer (data/hf_tokenizer.h): tokenizer.json read into its parts, and the
// pipeline that runs them as the tokenizers library does — added tokens found first in the text,
// then the normalizer, the pre-tokenizer, the model and the post-processor; decoding through the
// decoder. Text that is not valid UTF-8 has each ill-formed part replaced by U+FFFD first.
#include "data/hf_tokenizer.h"

#include <map>
#include <set>

#include "core/error.h"
#include "core/json_text.h"
#include "data/hf_components.h"

namespace tfm {

using hf::Where;

namespace {

struct AddedToken {
  int32_t id = 0;
  std::string content, pattern;  // pattern: what is searched for (normalized content if normalized)
  bool special = false, normalized = false, lstrip = false, rstrip = false, single_word = false;
};

// A part of the input: text still to tokenize, or an added token already found.
struct Part {
  hf::Piece piece;
  int32_t token = -1;
};

bool starts_with_word(std::string_view s) { return !s.empty() && unicode::is_word(unicode::decode_at(s, 0).first); }
bool ends_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return unicode::is_word(unicode::decode_at(s, i).first);
}

}  // namespace

struct HfTokenizer::Impl {
  std::unique_ptr<hf::Normalizer> normalizer;
  std::unique_ptr<hf::PreTokenizer> pre_tokenizer;
  std::unique_ptr<hf::Model> model;
  std::unique_ptr<hf::Decoder> decoder;
  hf::PostProcessor post;
  std::map<int32_t, AddedToken> added;
  std::set<std::string> special_contents;
  // Added tokens by the first byte of their pattern, longest first; raw (0) and normalized (1).
  std::map<unsigned char, std::vector<const AddedToken*>> by_first[2];

  void index_added_tokens();
  const AddedToken* longest_at(std::string_view text, size_t i, int normalized) const;
  std::vector<Part> split_added(const hf::Piece& piece, int normalized) const;
  void tokenize_text(const hf::Piece& piece, std::vector<int32_t>& ids) const;
};

void HfTokenizer::Impl::index_added_tokens() {
  for (auto& [id, t] : added) {
    t.pattern = t.normalized && normalizer ? normalizer->normalize(t.content) : t.content;
    if (t.special) special_contents.insert(t.content);
    if (!t.pattern.empty()) by_first[t.normalized][static_cast<unsigned char>(t.pattern[0])].push_back(&t);
  }
  for (auto& table : by_first) {
    for (auto& [b, list] : table) {
      std::stable_sort(list.begin(), list.end(),
                       [](const AddedToken* x, const AddedToken* y) { return x->pattern.size() > y->pattern.size(); });
    }
  }
}

const AddedToken* HfTokenizer::Impl::longest_at(std::string_view text, size_t i, int normalized) const {
  const auto it = by_first[normalized].find(static_cast<unsigned char>(text[i]));
  if (it == by_first[normalized].end()) return nullptr;
  for (const AddedToken* t : it->second) {
    if (text.compare(i, t->pattern.size(), t->pattern) == 0) return t;
  }
  return nullptr;
}

// The library's find_matches: leftmost-longest matches, each checked for single_word and widened
// over the spaces lstrip and rstrip take.
std::vector<Part> HfTokenizer::Impl::split_added(const hf::Piece& piece, int normalized) const {
  const std::string& s = piece.text;
  std::vector<Part> out;
  size_t done = 0;
  auto emit = [&](size_t b, size_t e, int32_t token) {
    if (e > b) out.push_back({{s.substr(b, e - b), piece.at_start && b == 0}, token});
  };
  for (size_t i = 0; i < s.size();) {
    const AddedToken* t = longest_at(s, i, normalized);
    if (!t) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + t->pattern.size();
    i = stop;
    if (t->single_word && ((start > 0 && ends_with_word(std::string_view(s).substr(0, start))) ||
                           (stop < s.size() && starts_with_word(std::string_view(s).substr(stop))))) {
      continue;
    }
    if (t->lstrip) start = std::max(hf::strip_white_space(std::string_view(s).substr(0, start), false, true).size(), done);
    if (t->rstrip) stop = s.size() - hf::strip_white_space(std::string_view(s).substr(stop), true, false).size();
    emit(done, start, -1);
    out.push_back({{s.substr(start, stop - start), piece.at_start && start == 0}, t->id});
    done = stop;
  }
  emit(done, s.size(), -1);
  return out;
}

void HfTokenizer::Impl::tokenize_text(const hf::Piece& piece, std::vector<int32_t>& ids) const {
  std::vector<hf::Piece> words{piece};
  if (pre_tokenizer) words = pre_tokenizer->pre_tokenize(std::move(words));
  for (const auto& w : words) model->tokenize(w.text, ids);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const Impl& m = *impl_;
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = m.post.prefix;
  for (const Part& raw : m.split_added({unicode::repair(text), true}, 0)) {
    if (raw.token >= 0) {
      ids.push_back(raw.token);
      continue;
    }
    hf::Piece normalized{m.normalizer ? m.normalizer->normalize(raw.piece.text) : raw.piece.text, raw.piece.at_start};
    for (const Part& part : m.split_added(normalized, 1)) {
      if (part.token >= 0) {
        ids.push_back(part.token);
      } else {
        m.tokenize_text(part.piece, ids);
      }
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), m.post.suffix.begin(), m.post.suffix.end());
  return ids;
}

std::string HfTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    TFM_CHECK(id >= 0 && id < size(), "decode: id ", id, " is out of range (the tokenizer has ", size(), " ids)");
    // An added token found in normalized text is decoded in its normalized form, as the library does.
    const auto added = impl_->added.find(id);
    std::string token = added == impl_->added.end() ? id_to_token(id)
                        : added->second.normalized ? added->second.pattern
                                                   : added->second.content;
    if (token.empty() && added == impl_->added.end()) continue;  // no token has the id: the library drops it
    if (skip_special_tokens && impl_->special_contents.count(token)) continue;
    tokens.push_back(std::move(token));
  }
  if (impl_->decoder) tokens = impl_->decoder->decode_chain(std::move(tokens));
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) out += (i > 0 && !impl_->decoder ? " " : "") + tokens[i];
  return out;
}

const std::vector<int32_t>& HfTokenizer::prefix_ids() const { return impl_->post.prefix; }
const std::vector<int32_t>& HfTokenizer::suffix_ids() const { return impl_->post.suffix; }

int64_t HfTokenizer::size() const {
  int64_t n = static_cast<int64_t>(impl_->model->vocabulary().size());
  if (!impl_->added.empty()) n = std::max<int64_t>(n, impl_->added.rbegin()->first + int64_t{1});
  return n;
}

std::string HfTokenizer::id_to_token(int32_t id) const {
  const auto it = impl_->added.find(id);
  if (it != impl_->added.end()) return it->second.content;
  const auto& vocab = impl_->model->vocabulary();
  return id >= 0 && static_cast<size_t>(id) < vocab.size() ? vocab[id] : "";
}

int32_t HfTokenizer::token_to_id(std::string_view token) const {
  for (const auto& [id, t] : impl_->added) {
    if (t.content == token) return id;
  }
  return impl_->model->token_to_id(token);
}

bool HfTokenizer::is_special(int32_t id) const {
  const auto it = impl_->added.find(id);
  return it != impl_->added.end() && it->second.special;
}

std::optional<int32_t> HfTokenizer::unk_id() const {
  const int32_t id = impl_->model->unk_id();
  return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
}

HfTokenizer::HfTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HfTokenizer::HfTokenizer(HfTokenizer&&) noexcept = default;
HfTokenizer& HfTokenizer::operator=(HfTokenizer&&) noexcept = default;
HfTokenizer::~HfTokenizer() = default;

namespace {

AddedToken read_added_token(const nlohmann::json& j, const Where& where) {
  AddedToken t;
  const auto& id = hf::required(j, "id", where);
  if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t{1} << 31)) {
    where["id"].fail(cat("must be an id, got ", json_quote(id)));
  }
  t.id = id.get<int32_t>();
  const auto& content = hf::required(j, "content", where);
  if (!content.is_string() || content.get<std::string>().empty()) {
    where["content"].fail(cat("must be a non-empty string, got ", json_quote(content)));
  }
  t.content = content.get<std::string>();
  t.special = hf::get_bool(j, "special", false, where);
  t.normalized = hf::get_bool(j, "normalized", !t.special, where);
  t.lstrip = hf::get_bool(j, "lstrip", false, where);
  t.rstrip = hf::get_bool(j, "rstrip", false, where);
  t.single_word = hf::get_bool(j, "single_word", false, where);
  return t;
}

// model.vocab's ids below max_ids, checked before the model's table of max id + 1 entries is made.
void check_model_ids(const nlohmann::json& root, const Where& where, int64_t max_ids) {
  const auto model = root.find("model");
  if (model == root.end() || !model->is_object()) return;
  const auto vocab = model->find("vocab");
  if (vocab == model->end() || !vocab->is_object()) return;
  int64_t highest = -1;
  std::string token;
  for (const auto& [piece, id] : vocab->items()) {
    if (id.is_number_integer() && id.get<int64_t>() > highest) highest = id.get<int64_t>(), token = piece;
  }
  if (highest >= max_ids) {
    where["model"]["vocab"].fail(cat("'", token, "' has id ", highest, ", but the model's vocabulary has ", max_ids,
                                     " ids (its vocab_size): the tokenizer has more ids than the model"));
  }
}

}  // namespace

HfTokenizer HfTokenizer::from_json(const std::string& json_text, const std::string& what, int64_t max_ids) {
  const nlohmann::json root = parse_json(json_text, what);
  const Where where{what, ""};
  if (!root.is_object()) where.fail("must be a JSON object");
  check_model_ids(root, where, max_ids);
  // "truncation" and "padding" are settings of batch encoding that transformers' tokenizers
  // override on every call (off unless the call asks for them): a text's ids never depend on them.
  auto impl = std::make_unique<Impl>();
  impl->normalizer = hf::make_normalizer(root.value("normalizer", nlohmann::json()), where["normalizer"]);
  impl->pre_tokenizer = hf::make_pre_tokenizer(root.value("pre_tokenizer", nlohmann::json()), where["pre_tokenizer"]);
  impl->model = hf::make_model(hf::required(root, "model", where), where["model"]);
  impl->post = hf::make_post_processor(root.value("post_processor", nlohmann::json()), where["post_processor"]);
  impl->decoder = hf::make_decoder(root.value("decoder", nlohmann::json()), where["decoder"]);
  const nlohmann::json added = root.value("added_tokens", nlohmann::json::array());
  if (!added.is_array()) where["added_tokens"].fail(cat("must be a list, got ", json_quote(added)));
  for (size_t i = 0; i < added.size(); ++i) {
    AddedToken t = read_added_token(added[i], where["added_tokens"][i]);
    impl->added[t.id] = std::move(t);
  }
  impl->index_added_tokens();
  return HfTokenizer(std::move(impl));
}

HfTokenizer HfTokenizer::from_wordpiece_vocab(const std::string& vocab_txt, bool lowercase,
                                              std::optional<bool> strip_accents, bool chinese_chars,
                                              const std::string& what) {
  // One piece a line, as BERT's load_vocab reads it: Python's text files end a line at "\n", "\r\n"
  // or "\r" alike (a vocab.txt saved on Windows has the same pieces).
  std::vector<std::string> pieces;
  for (size_t b = 0; b < vocab_txt.size();) {
    size_t e = vocab_txt.find_first_of("\r\n", b);
    if (e == std::string::npos) e = vocab_txt.size();
    pieces.push_back(vocab_txt.substr(b, e - b));
    b = e + (vocab_txt.compare(e, 2, "\r\n") == 0 ? 2 : 1);
  }
  const Where where{what, ""};
  auto impl = std::make_unique<Impl>();
  impl->normalizer = hf::make_bert_normalizer(true, chinese_chars, strip_accents.value_or(lowercase), lowercase);
  impl->pre_tokenizer = hf::make_pre_tokenizer(nlohmann::json{{"type", "BertPreTokenizer"}}, where);
  impl->model = hf::make_wordpiece(pieces, "[UNK]", where);
  impl->decoder = hf::make_decoder(nlohmann::json{{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}, where);
  for (const char* name : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    const int32_t id = impl->model->token_to_id(name);
    if (id < 0 && (std::string(name) == "[CLS]" || std::string(name) == "[SEP]" || std::string(name) == "[UNK]")) {
      where.fail(cat("BERT's vocabulary has no ", name, " piece"));
    }
    if (id >= 0) impl->added[id] = AddedToken{id, name, "", true, false, false, false, false};
  }
  impl->post = {{impl->model->token_to_id("[CLS]")}, {impl->model->token_to_id("[SEP]")}};
  impl->index_added_tokens();
  return HfTokenizer(std::move(impl));
}

}  // namespace tfm
