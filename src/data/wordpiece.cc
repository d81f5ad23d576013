// The WordPiece model (BERT): each word cut greedily into the longest pieces of the vocabulary,
// later pieces with the continuing-subword prefix ("##"); a word that cannot be cut, or that is
// longer than max_input_chars_per_word characters, is the unknown token.
#include "core/error.h"
#include "data/hf_components.h"

namespace tfm::hf {
namespace {

class WordPiece : public Model {
 public:
  WordPiece(Vocabulary vocab, std::string unk, std::string prefix, int64_t max_chars)
      : vocab_(std::move(vocab)), unk_(std::move(unk)), prefix_(std::move(prefix)), max_chars_(max_chars) {}

  void tokenize(std::string_view word, std::vector<int32_t>& ids) const override {
    const size_t first = ids.size();
    if (unicode::to_utf32(word).size() <= static_cast<size_t>(max_chars_) && cut(word, ids)) return;
    ids.resize(first);
    const int32_t unk = vocab_.find(unk_);
    TFM_CHECK(unk >= 0, "WordPiece: the unknown token '", unk_, "' is not in the vocabulary");
    ids.push_back(unk);
  }
  const std::vector<std::string>& vocabulary() const override { return vocab_.by_id; }
  int32_t token_to_id(std::string_view token) const override { return vocab_.find(std::string(token)); }
  int32_t unk_id() const override { return vocab_.find(unk_); }

 private:
  // The greedy longest-match-first cut; false when some rest of the word matches no piece.
  bool cut(std::string_view word, std::vector<int32_t>& ids) const {
    size_t start = 0;
    std::string candidate;
    while (start < word.size()) {
      size_t end = word.size();
      int32_t found = -1;
      while (start < end) {
        candidate.assign(start > 0 ? prefix_ : "");
        candidate.append(word.substr(start, end - start));
        found = vocab_.find(candidate);
        if (found >= 0) break;
        do {
          --end;
        } while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
      }
      if (found < 0) return false;
      ids.push_back(found);
      start = end;
    }
    return true;
  }

  Vocabulary vocab_;
  std::string unk_, prefix_;
  int64_t max_chars_;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece(const nlohmann::json& spec, const Where& where) {
  return std::make_unique<WordPiece>(read_vocabulary(required(spec, "vocab", where), where["vocab"]),
                                     get_string(spec, "unk_token", "[UNK]", where),
                                     get_string(spec, "continuing_subword_prefix", "##", where),
                                     get_int(spec, "max_input_chars_per_word", 100, where));
}

std::unique_ptr<Model> make_wordpiece(std::vector<std::string> pieces, const std::string& unk, const Where& where) {
  return std::make_unique<WordPiece>(vocabulary_of(std::move(pieces), where), unk, "##", 100);
}

}  // namespace tfm::hf
