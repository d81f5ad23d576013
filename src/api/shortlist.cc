#include "transformer/shortlist.h"

#include "core/error.h"
#include "data/parallel_corpus.h"
#include "data/vocab.h"
#include "decode/shortlist.h"

namespace transformer {

ShortlistSummary build_shortlist(const std::string& source, const std::string& target, const std::string& vocab_path,
                                 const std::string& output, const ShortlistOptions& options) {
  options.validate();  // before reading anything
  const tfm::Vocab vocab = tfm::Vocab::load(vocab_path);
  tfm::CorpusStats stats;
  // Pairs with more than 4096 characters on a side are skipped and counted, as training skips them
  // by default (TrainOptions::max_chars): tokenizing a 20 MB line took 5.5 GB.
  constexpr int64_t kMaxChars = 4096;
  const std::vector<tfm::SentencePair> pairs = tfm::read_parallel(source, target, kMaxChars, &stats);
  TFM_CHECK(!pairs.empty(), "no usable sentence pairs in '", source, "' and '", target, "' (", stats.summary(), ")");
  std::vector<std::vector<int32_t>> src, tgt;
  src.reserve(pairs.size());
  tgt.reserve(pairs.size());
  for (const tfm::SentencePair& p : pairs) {
    src.push_back(vocab.encode(p.source));
    tgt.push_back(vocab.encode(p.target, tfm::Side::kTarget));
  }
  const tfm::Shortlist s = tfm::Shortlist::build(src, tgt, vocab.size(), options, vocab.fingerprint());
  s.save(output);
  return {stats.summary(), static_cast<int64_t>(s.frequent().size())};
}

}  // namespace transformer
