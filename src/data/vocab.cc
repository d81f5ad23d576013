#include "data/vocab.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <unordered_map>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_text.h"
#include "io/atomic_file.h"

namespace tfm {

Vocab::Vocab() : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
Vocab::~Vocab() = default;
Vocab::Vocab(Vocab&&) noexcept = default;
Vocab& Vocab::operator=(Vocab&&) noexcept = default;

namespace {
class Sentences : public sentencepiece::SentenceIterator {
 public:
  explicit Sentences(const std::vector<std::string>& s) : s_(s) {}
  bool done() const override { return i_ >= s_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return s_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& s_;
  size_t i_ = 0;
};
}  // namespace

Vocab Vocab::train(const std::vector<std::string>& sentences, const VocabOptions& o) {
  TFM_CHECK(o.model_type == "bpe" || o.model_type == "unigram", "vocabulary type must be bpe or unigram, got '",
            o.model_type, "'");
  TFM_CHECK(o.size >= 8, "vocabulary size must be at least 8, got ", o.size);
  TFM_CHECK(!sentences.empty(), "cannot train a vocabulary on no sentences");
  // As a map rather than a command line: that form of Train logs the command on stderr before it
  // reads --minloglevel, and the library writes nothing to stderr.
  std::unordered_map<std::string, std::string> args = {
      {"model_type", o.model_type},
      {"vocab_size", cat(o.size)},
      {"character_coverage", cat(o.character_coverage)},
      {"input_sentence_size", cat(o.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"pad_id", "0"},
      {"unk_id", "1"},
      {"bos_id", "2"},
      {"eos_id", "3"},
      {"hard_vocab_limit", "false"},
      {"num_threads", "1"},
      {"minloglevel", "2"},
  };
  if (!o.user_defined_symbols.empty()) {
    std::string symbols;
    for (const std::string& piece : o.user_defined_symbols) symbols += (symbols.empty() ? "" : ",") + piece;
    args["user_defined_symbols"] = symbols;
  }
  sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned int>(o.seed));  // the sentence sampling
  Sentences it(sentences);
  Vocab v;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &v.serialized_);
  if (!status.ok()) {
    // SentencePiece's "Vocabulary size is smaller than required_chars. 10 vs 30": in this project's words.
    const std::string why = status.ToString();
    const std::string marker = "Vocabulary size is smaller than required_chars. ";
    const size_t at = why.find(marker);
    if (at != std::string::npos) {
      const std::string counts = why.substr(at + marker.size());  // "10 vs 30"
      const size_t vs = counts.find(" vs ");
      if (vs != std::string::npos)
        throw Error(cat("vocabulary size ", o.size, " is too small for the training text's ",
                        counts.substr(vs + 4, counts.find_first_not_of("0123456789", vs + 4) - (vs + 4)),
                        " distinct characters, each of which needs a piece besides the special ones: give a larger "
                        "vocabulary size"));
    }
    throw Error(cat("training the SentencePiece vocabulary failed: ", why));
  }
  const auto loaded = v.sp_->LoadFromSerializedProto(v.serialized_);
  TFM_CHECK(loaded.ok(), "loading the trained vocabulary failed: ", loaded.ToString());
  return v;
}

namespace {
constexpr const char* kPieceFormat = "tfm-piece-vocab";

// `what` names the bytes in the error ("--source-spm 'x.spm'").
void load_spm(sentencepiece::SentencePieceProcessor& sp, const std::string& bytes, const std::string& what) {
  const auto status = sp.LoadFromSerializedProto(bytes);
  TFM_CHECK(status.ok(), what, " is not a SentencePiece model: ", status.ToString());
}
}  // namespace

std::string default_vocab_path(const std::string& model_path) {
  const std::filesystem::path dir = std::filesystem::path(model_path).parent_path();
  const std::filesystem::path pieces = dir / kPieceVocabFile;
  return (!std::filesystem::exists(dir / "vocab.model") && std::filesystem::exists(pieces) ? pieces
                                                                                            : dir / "vocab.model")
      .string();
}

Vocab Vocab::from_pieces(std::vector<std::string> pieces, const std::string& source_spm, const std::string& target_spm,
                         int32_t unk_id, const std::vector<int32_t>& skipped, const std::string& source_name,
                         const std::string& target_name) {
  Vocab v;
  TFM_CHECK(!pieces.empty(), "a piece vocabulary needs at least one piece");
  const int64_t n = static_cast<int64_t>(pieces.size());
  TFM_CHECK(unk_id >= 0 && unk_id < n, "the unknown-piece id ", unk_id, " is outside the vocabulary [0, ", n, ")");
  v.pieces_ = std::move(pieces);
  for (size_t i = 0; i < v.pieces_.size(); ++i) {
    const auto [it, inserted] = v.piece_ids_.emplace(v.pieces_[i], static_cast<int32_t>(i));
    TFM_CHECK(inserted, "the vocabulary has the piece '", v.pieces_[i], "' twice, as ids ", it->second, " and ", i);
  }
  v.unk_id_ = unk_id;
  v.skipped_.assign(v.pieces_.size(), false);
  for (int32_t id : skipped) {
    TFM_CHECK(id >= 0 && id < n, "a special id ", id, " is outside the vocabulary [0, ", n, ")");
    v.skipped_[static_cast<size_t>(id)] = true;
  }
  v.serialized_ = source_spm;
  v.target_serialized_ = target_spm;
  v.target_sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  load_spm(*v.sp_, v.serialized_, source_name);
  load_spm(*v.target_sp_, v.target_serialized_, target_name);
  return v;
}

void Vocab::save_pieces(const std::string& dir) const {
  if (hf_) return save_hf_tokenizer(hf_files_, dir, kPieceVocabFile);
  TFM_CHECK(has_piece_table(), "save_pieces: not a piece vocabulary");
  namespace fs = std::filesystem;
  auto write = [&](const std::string& name, const std::string& bytes) {
    write_file_atomic((fs::path(dir) / name).string(),
                      [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
  };
  nlohmann::json j = {{"format", kPieceFormat}, {"version", 1}, {"source_spm", "source.spm"},
                      {"target_spm", "target.spm"}, {"unk_id", unk_id_}};
  std::vector<int32_t> skipped;
  for (size_t i = 0; i < skipped_.size(); ++i)
    if (skipped_[i]) skipped.push_back(static_cast<int32_t>(i));
  j["skipped_ids"] = skipped;
  if (!languages_.empty()) j["languages"] = languages_;  // [[code, id], ...]
  j["pieces"] = pieces_;
  write("source.spm", serialized_);
  write("target.spm", target_serialized_);
  write(kPieceVocabFile, j.dump(1) + "\n");
}

Vocab Vocab::load(const std::string& path) {
  Vocab v;
  v.serialized_ = read_file(path);
  if (const size_t first = v.serialized_.find_first_not_of(" \t\r\n");
      first != std::string::npos && v.serialized_[first] == '{') {  // a piece vocabulary
    const nlohmann::json j = parse_json(v.serialized_, cat("'", path, "'"));
    auto field = [&](const char* key) -> const nlohmann::json& {
      TFM_CHECK(j.is_object() && j.contains(key), "'", path, "' is not a piece vocabulary: it has no '", key, "'");
      return j[key];
    };
    if (field("format") == kHfTokenizerFormat)  // errors name the vocabulary.json
      return from_hf_tokenizer(load_hf_tokenizer_files(path, v.serialized_), cat("'", path, "'"));
    TFM_CHECK(field("format") == kPieceFormat, "'", path, "': format ", json_quote(field("format")), ", expected \"",
              kPieceFormat, "\"");
    TFM_CHECK(field("version") == 1, "'", path, "': version ", json_quote(field("version")), " is not supported (1 is)");
    std::vector<std::string> pieces;
    std::vector<int32_t> skipped;
    int32_t unk = 0;
    std::string source, target;
    Languages languages;
    try {
      if (j.contains("languages")) languages = j["languages"].get<Languages>();
      pieces = field("pieces").get<std::vector<std::string>>();
      skipped = field("skipped_ids").get<std::vector<int32_t>>();
      unk = field("unk_id").get<int32_t>();
      source = field("source_spm").get<std::string>();
      target = field("target_spm").get<std::string>();
    } catch (const nlohmann::json::exception& e) {
      throw Error(cat("'", path, "': a field has the wrong type: ", e.what()));
    }
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    try {
      Vocab loaded = from_pieces(std::move(pieces), read_file((dir / source).string()),
                                 read_file((dir / target).string()), unk, skipped,
                                 cat("'", (dir / source).string(), "'"), cat("'", (dir / target).string(), "'"));
      loaded.set_languages(std::move(languages));
      return loaded;
    } catch (const Error& e) {
      throw Error(cat("'", path, "': ", e.what()));
    }
  }
  return from_serialized(std::move(v.serialized_), cat("'", path, "'"));
}

Vocab Vocab::from_hf_tokenizer(HfTokenizerFiles files, const std::string& what) {
  Vocab v;
  v.hf_ = std::make_unique<HfTokenizer>(build_hf_tokenizer(files, what));
  v.serialized_ = files.tokenizer_json.empty() ? files.wordpiece_vocab : files.tokenizer_json;
  v.hf_files_ = std::move(files);
  return v;
}

Vocab Vocab::from_serialized(std::string bytes, const std::string& what) {
  Vocab v;
  v.serialized_ = std::move(bytes);
  const auto status = v.sp_->LoadFromSerializedProto(v.serialized_);
  TFM_CHECK(status.ok(), what, " is not a SentencePiece model: ", status.ToString());
  TFM_CHECK(v.sp_->pad_id() == 0 && v.sp_->unk_id() == 1 && v.sp_->bos_id() == 2 && v.sp_->eos_id() == 3,
            what, ": the vocabulary must have pad=0, unk=1, bos=2, eos=3 (train it with --pad_id=0 --unk_id=1 "
            "--bos_id=2 --eos_id=3); it has pad=", v.sp_->pad_id(), ", unk=", v.sp_->unk_id(), ", bos=",
            v.sp_->bos_id(), ", eos=", v.sp_->eos_id());
  return v;
}

void Vocab::save(const std::string& path) const {
  TFM_CHECK(!has_piece_table() && !hf_, "'", path, "': a piece vocabulary is saved with its SentencePiece models (save_pieces)");
  write_file_atomic(path, [&](std::ostream& out) { out.write(serialized_.data(), static_cast<std::streamsize>(serialized_.size())); });
}

std::vector<int32_t> Vocab::encode(const std::string& text, Side side) const {
  if (hf_) return hf_encode(*hf_, text);
  if (has_piece_table()) {
    std::vector<int32_t> ids;
    std::string_view rest = text;
    // A multilingual model's target-language token (">>deu<<") leads the text and is one piece, as
    // OPUS-MT's preprocessing and Hugging Face's MarianTokenizer treat it.
    if (rest.starts_with(">>"))
      if (const size_t end = rest.find("<<"); end != std::string_view::npos)
        if (const auto it = piece_ids_.find(std::string(rest.substr(0, end + 2))); it != piece_ids_.end()) {
          ids.push_back(it->second);
          rest.remove_prefix(end + 2);
        }
    std::vector<std::string> pieces;
    const auto& sp = side == Side::kTarget ? *target_sp_ : *sp_;
    const auto status = sp.Encode(std::string(rest), &pieces);
    TFM_CHECK(status.ok(), "cannot encode a sentence: ", status.ToString());
    for (const std::string& p : pieces) {
      const auto it = piece_ids_.find(p);
      ids.push_back(it == piece_ids_.end() ? unk_id_ : it->second);
    }
    return ids;
  }
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  TFM_CHECK(status.ok(), "cannot encode a sentence: ", status.ToString());
  return {ids.begin(), ids.end()};
}

std::string Vocab::decode(const std::vector<int32_t>& ids) const {
  if (hf_) return hf_decode(*hf_, ids);
  if (has_piece_table()) {
    std::vector<std::string> pieces;
    for (int32_t id : ids)
      if (id >= 0 && id < size() && !skipped_[static_cast<size_t>(id)]) pieces.push_back(pieces_[static_cast<size_t>(id)]);
    std::string text;
    const auto status = target_sp_->Decode(pieces, &text);
    TFM_CHECK(status.ok(), "cannot decode pieces: ", status.ToString());
    // A piece of the shared table that the target model lacks keeps its "▁" (U+2581): a space, as
    // OPUS-MT's postprocessing and Hugging Face's MarianTokenizer make it; then trimmed.
    for (size_t at; (at = text.find("\xE2\x96\x81")) != std::string::npos;) text.replace(at, 3, " ");
    const size_t begin = text.find_first_not_of(' '), end = text.find_last_not_of(' ');
    return begin == std::string::npos ? std::string() : text.substr(begin, end - begin + 1);
  }
  std::vector<int> clean;
  for (int32_t id : ids)
    if (id > 3 && id < size()) clean.push_back(id);  // drop pad, bos, eos (and unk's surface form ⁇)
  std::string text;
  const auto status = sp_->Decode(clean, &text);
  TFM_CHECK(status.ok(), "cannot decode ids: ", status.ToString());
  return text;
}

void Vocab::set_languages(Languages languages) {
  TFM_CHECK(languages.empty() || has_piece_table(), "language codes need a piece vocabulary");
  for (const auto& [code, id] : languages) {
    TFM_CHECK(id >= 0 && id < size(), "the token of language '", code, "' is id ", id, ", outside the vocabulary [0, ",
              size(), ")");
    TFM_CHECK(std::count_if(languages.begin(), languages.end(), [&](const auto& l) { return l.first == code; }) == 1,
              "the language code '", code, "' is given twice");
    skipped_[static_cast<size_t>(id)] = true;
  }
  languages_ = std::move(languages);
}

int32_t Vocab::language_id(const std::string& code) const {
  for (const auto& [c, id] : languages_)
    if (c == code) return id;
  return -1;
}

std::string Vocab::piece(int32_t id) const {
  TFM_CHECK(id >= 0 && id < size(), "token id ", id, " is outside the vocabulary [0, ", size(), ")");
  if (hf_) return hf_piece(*hf_, id);
  return has_piece_table() ? pieces_[static_cast<size_t>(id)] : sp_->IdToPiece(id);
}

int32_t Vocab::piece_id(const std::string& piece) const {
  if (hf_) return hf_piece_id(*hf_, piece);
  if (has_piece_table()) {
    const auto it = piece_ids_.find(piece);
    return it == piece_ids_.end() ? -1 : it->second;
  }
  // SentencePiece answers the unknown piece's id for a piece it lacks.
  const int id = sp_->PieceToId(piece);
  return id >= 0 && id < sp_->GetPieceSize() && sp_->IdToPiece(id) == piece ? id : -1;
}

int64_t Vocab::size() const {
  if (hf_) return hf_files_.size;
  return has_piece_table() ? static_cast<int64_t>(pieces_.size()) : sp_->GetPieceSize();
}

}  // namespace tfm

namespace tfm {

std::string Vocab::fingerprint() const {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  auto add = [&](std::string_view bytes) {
    for (const char c : bytes) {
      h ^= static_cast<uint8_t>(c);
      h *= 1099511628211ull;
    }
  };
  add(serialized_);
  if (hf_) add(hf_fingerprint_text(hf_files_));
  if (has_piece_table()) {  // then the target's model, and the table: each piece and a newline, the ids
    add(target_serialized_);
    for (const std::string& p : pieces_) add(p + "\n");
    add(cat("unk ", unk_id_, "\n"));
    for (size_t i = 0; i < skipped_.size(); ++i)
      if (skipped_[i]) add(cat("skip ", i, "\n"));
    for (const auto& [code, id] : languages_) add(cat("language ", code, " ", id, "\n"));
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace tfm
