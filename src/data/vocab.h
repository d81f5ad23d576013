#pragma once
// The subword vocabulary: a SentencePiece model (BPE or unigram) shared by source and target, as the
// paper's shared BPE, so that the embeddings can be tied. Special ids are fixed: pad 0, unk 1,
// bos 2, eos 3 (ModelConfig's defaults).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transformer/vocab_options.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tfm {

using transformer::VocabOptions;  // include/transformer/vocab_options.h

class Vocab {
 public:
  Vocab();
  ~Vocab();
  Vocab(Vocab&&) noexcept;
  Vocab& operator=(Vocab&&) noexcept;

  // Trains on the given sentences (e.g. both sides of the training data) and returns the vocabulary.
  static Vocab train(const std::vector<std::string>& sentences, const VocabOptions& options);
  static Vocab load(const std::string& path);
  // Writes the .model file atomically.
  void save(const std::string& path) const;

  std::vector<int32_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int32_t>& ids) const;  // stops at nothing; skips specials
  std::string piece(int32_t id) const;
  int64_t size() const;
  // 16 hex digits (FNV-1a 64 of the .model file's bytes): model files record the fingerprint of the
  // vocabulary they were trained with, so that another vocabulary of the same size is refused.
  std::string fingerprint() const;

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string serialized_;
};

}  // namespace tfm
