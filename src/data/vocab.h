#pragma once
// The subword vocabulary. A model trained here has one SentencePiece model (BPE or unigram) shared
// by source and target, as the paper's shared BPE, so that the embeddings can be tied; its special
// ids are fixed: pad 0, unk 1, bos 2, eos 3 (ModelConfig's defaults).
//
// An imported model (Marian / OPUS-MT, Hugging Face MarianMT; src/import) has a piece vocabulary
// instead (`vocabulary.json`, written by `transformer import`): a source and a target SentencePiece
// model that only segment text into pieces, and a table of pieces whose order gives the ids, as
// Marian's vocab.yml and Hugging Face's vocab.json. A piece the table lacks becomes <unk>; decoding
// joins the target pieces through the target SentencePiece model.
//
// An imported Hugging Face model keeps its own tokenizer (data/hf_tokenizer.h: tokenizer.json, or
// BERT's vocab.txt), in `vocabulary.json` of format "huggingface-tokenizer" naming the file beside
// it: its ids, without the special tokens its post-processor adds (the model's bos and eos ids add
// them), and decoding as Hugging Face's, skipping special tokens.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/vocab_hf.h"
#include "transformer/vocab_options.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tfm {

using transformer::VocabOptions;  // include/transformer/vocab_options.h

// Which side's segmentation encode uses (piece vocabularies have one SentencePiece model per side).
enum class Side { kSource, kTarget };

// The file name beside a model that holds its piece vocabulary (vocab.model holds a SentencePiece one).
inline constexpr const char* kPieceVocabFile = "vocabulary.json";

// The vocabulary a model file uses when none is given: vocab.model beside it, else vocabulary.json
// (an imported model's); the first of the two when neither exists, for the error message.
std::string default_vocab_path(const std::string& model_path);

class Vocab {
 public:
  Vocab();
  ~Vocab();
  Vocab(Vocab&&) noexcept;
  Vocab& operator=(Vocab&&) noexcept;

  // Trains on the given sentences (e.g. both sides of the training data) and returns the vocabulary.
  static Vocab train(const std::vector<std::string>& sentences, const VocabOptions& options);
  // A SentencePiece .model file, or a piece vocabulary (a JSON file, see docs/import.md) whose
  // SentencePiece models are named relative to its folder.
  static Vocab load(const std::string& path);
  // A piece vocabulary: `pieces` in id order, the SentencePiece models' bytes, the <unk> id, and the
  // ids decoding skips (end of sentence, padding, unknown). Throws naming a duplicate piece, or the
  // SentencePiece model that is not one by its name (its file, say).
  static Vocab from_pieces(std::vector<std::string> pieces, const std::string& source_spm,
                           const std::string& target_spm, int32_t unk_id, const std::vector<int32_t>& skipped,
                           const std::string& source_name = "the source SentencePiece model",
                           const std::string& target_name = "the target SentencePiece model");
  // A Hugging Face tokenizer; `what` names its files in errors.
  static Vocab from_hf_tokenizer(HfTokenizerFiles files, const std::string& what);
  const HfTokenizer* hf_tokenizer() const { return hf_.get(); }  // null unless from_hf_tokenizer
  // A SentencePiece model from its bytes (what save writes); `what` names them in errors.
  static Vocab from_serialized(std::string bytes, const std::string& what);
  // The SentencePiece model's bytes (the source's, for a piece vocabulary).
  const std::string& serialized() const { return serialized_; }
  // Writes the .model file atomically (a SentencePiece vocabulary only).
  void save(const std::string& path) const;
  // Writes a piece vocabulary as `dir`/vocabulary.json with its two SentencePiece models beside it
  // (a Hugging Face tokenizer: with tokenizer.json or vocab.txt), each file atomically.
  void save_pieces(const std::string& dir) const;
  bool has_piece_table() const { return !pieces_.empty(); }
  // A multilingual translator's language codes (M2M-100's "de", NLLB's "deu_Latn") and the ids of
  // their tokens, in the tokenizer's order; a piece vocabulary only. Setting them makes decoding
  // skip those ids. Empty for a model of one language pair.
  using Languages = std::vector<std::pair<std::string, int32_t>>;
  void set_languages(Languages languages);
  const Languages& languages() const { return languages_; }
  // The id of a language code's token; -1 when the vocabulary has no such code.
  int32_t language_id(const std::string& code) const;

  std::vector<int32_t> encode(const std::string& text, Side side = Side::kSource) const;
  std::string decode(const std::vector<int32_t>& ids) const;  // stops at nothing; skips specials
  std::string piece(int32_t id) const;
  // The id of the piece spelled exactly `piece` ("<mask>"); -1 when the vocabulary has none.
  int32_t piece_id(const std::string& piece) const;
  int64_t size() const;
  // 16 hex digits (FNV-1a 64 of the .model file's bytes): model files record the fingerprint of the
  // vocabulary they were trained with, so that another vocabulary of the same size is refused.
  std::string fingerprint() const;

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;  // the (source's) SentencePiece model
  std::string serialized_;                                     // its bytes
  // Piece vocabularies only (empty otherwise):
  std::unique_ptr<sentencepiece::SentencePieceProcessor> target_sp_;
  std::string target_serialized_;
  std::vector<std::string> pieces_;  // by id
  std::unordered_map<std::string, int32_t> piece_ids_;
  int32_t unk_id_ = 1;
  std::vector<bool> skipped_;  // by id: ids decoding drops
  Languages languages_;
  // Hugging Face tokenizers only:
  std::unique_ptr<HfTokenizer> hf_;
  HfTokenizerFiles hf_files_;
};

}  // namespace tfm
