#pragma once
// A vocabulary shortlist for decoding, as Marian's lexical shortlist and CTranslate2's vocabulary
// map: for each batch of source sentences, the output projection scores only the target tokens
// the sources make likely, not the whole vocabulary V. Those are the `frequent` most common target
// tokens plus, for every source token, its `per_source` best target tokens by p(t | s), estimated
// from sentence co-occurrence in parallel data: p(t | s) = c(s, t) / c(s), where c counts the
// sentence pairs that contain s (and t). Softmax and search then run over the V' selected tokens;
// a token outside them cannot be produced (the BLEU change is measured in docs/performance.md).
#include <cstdint>
#include <string>
#include <vector>

#include "transformer/shortlist.h"

namespace tfm {

using transformer::ShortlistOptions;  // include/transformer/shortlist.h

class Shortlist {
 public:
  Shortlist() = default;

  // From token ids of sentence pairs (sources[i] translates to targets[i]), ids in [0, vocab_size).
  // `vocab_fingerprint`: Vocab::fingerprint() of the vocabulary the ids come from ("" if unknown).
  static Shortlist build(const std::vector<std::vector<int32_t>>& sources,
                         const std::vector<std::vector<int32_t>>& targets, int64_t vocab_size,
                         const ShortlistOptions& options, const std::string& vocab_fingerprint);

  // Text file (docs/checkpoint-format.md): a header ("tfm-shortlist 2", "vocab_size N",
  // "vocab_fingerprint F|-", "lines L", "checksum xxh3-64:HEX"), then L lines: "frequent ID...",
  // and one line "SOURCE_ID<TAB>TARGET_ID..." per source token with a list. The checksum is the
  // XXH3-64 (io/checksum.h) of the whole file with its own 16 digits read as '0's. save writes
  // atomically; load checks the number of lines and the checksum before it reads any list, refuses
  // version-1 files (no checksum; rebuilding takes seconds), and throws tfm::Error naming the file
  // (and the line and the bad value). With vocab_size > 0, a file for another vocabulary size is
  // refused before anything is allocated.
  void save(const std::string& path) const;
  static Shortlist load(const std::string& path, int64_t vocab_size = 0);

  // Throws unless the shortlist was built for a vocabulary of this size (and, when both are known,
  // this fingerprint); `model` names the model in the message.
  void check_vocabulary(int64_t vocab_size, const std::string& fingerprint, const std::string& model) const;

  // The target ids the output may use for a batch of sources, sorted and unique: the frequent
  // tokens, each source token's list, and `always` (the end of sentence).
  std::vector<int32_t> select(const std::vector<std::vector<int32_t>>& sources,
                              const std::vector<int32_t>& always) const;

  int64_t vocab_size() const { return vocab_size_; }
  const std::string& vocab_fingerprint() const { return fingerprint_; }
  const std::vector<int32_t>& frequent() const { return frequent_; }
  // Source token s's targets, best first (empty for tokens never seen in the data).
  const std::vector<int32_t>& targets_of(int32_t s) const;

 private:
  int64_t vocab_size_ = 0;
  std::string fingerprint_;
  std::vector<int32_t> frequent_;                // most frequent first
  std::vector<std::vector<int32_t>> by_source_;  // [V]: each source token's targets, best first
};

}  // namespace tfm
