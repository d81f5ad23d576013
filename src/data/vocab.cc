#include "data/vocab.h"

#include <cstdio>
#include <unordered_map>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "core/error.h"
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
  const std::unordered_map<std::string, std::string> args = {
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
  sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned int>(o.seed));  // the sentence sampling
  Sentences it(sentences);
  Vocab v;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &v.serialized_);
  TFM_CHECK(status.ok(), "training the SentencePiece vocabulary failed: ", status.ToString());
  const auto loaded = v.sp_->LoadFromSerializedProto(v.serialized_);
  TFM_CHECK(loaded.ok(), "loading the trained vocabulary failed: ", loaded.ToString());
  return v;
}

Vocab Vocab::load(const std::string& path) {
  Vocab v;
  v.serialized_ = read_file(path);
  const auto status = v.sp_->LoadFromSerializedProto(v.serialized_);
  TFM_CHECK(status.ok(), "'", path, "' is not a SentencePiece model: ", status.ToString());
  TFM_CHECK(v.sp_->pad_id() == 0 && v.sp_->unk_id() == 1 && v.sp_->bos_id() == 2 && v.sp_->eos_id() == 3,
            "'", path, "': the vocabulary must have pad=0, unk=1, bos=2, eos=3 (train it with --pad_id=0 --unk_id=1 "
            "--bos_id=2 --eos_id=3); it has pad=", v.sp_->pad_id(), ", unk=", v.sp_->unk_id(), ", bos=",
            v.sp_->bos_id(), ", eos=", v.sp_->eos_id());
  return v;
}

void Vocab::save(const std::string& path) const {
  write_file_atomic(path, [&](std::ostream& out) { out.write(serialized_.data(), static_cast<std::streamsize>(serialized_.size())); });
}

std::vector<int32_t> Vocab::encode(const std::string& text) const {
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  TFM_CHECK(status.ok(), "cannot encode a sentence: ", status.ToString());
  return {ids.begin(), ids.end()};
}

std::string Vocab::decode(const std::vector<int32_t>& ids) const {
  std::vector<int> clean;
  for (int32_t id : ids)
    if (id > 3 && id < size()) clean.push_back(id);  // drop pad, bos, eos (and unk's surface form ⁇)
  std::string text;
  const auto status = sp_->Decode(clean, &text);
  TFM_CHECK(status.ok(), "cannot decode ids: ", status.ToString());
  return text;
}

std::string Vocab::piece(int32_t id) const {
  TFM_CHECK(id >= 0 && id < size(), "token id ", id, " is outside the vocabulary [0, ", size(), ")");
  return sp_->IdToPiece(id);
}

int64_t Vocab::size() const { return sp_->GetPieceSize(); }

}  // namespace tfm

namespace tfm {

std::string Vocab::fingerprint() const {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (const char c : serialized_) {
    h ^= static_cast<uint8_t>(c);
    h *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace tfm
