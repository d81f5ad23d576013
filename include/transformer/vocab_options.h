#pragma once
// How a SentencePiece vocabulary is trained: one vocabulary shared by source and target, as the
// paper's shared BPE, with fixed special ids (pad 0, unk 1, bos 2, eos 3).
#include <cstdint>
#include <string>
#include <vector>

namespace transformer {

struct VocabOptions {
  int64_t size = 8000;               // pieces, specials included
  std::string model_type = "bpe";    // "bpe" or "unigram"
  double character_coverage = 1.0;   // fraction of characters the vocabulary must cover
  int64_t max_sentences = 2'000'000; // sentences sampled for training the vocabulary
  uint64_t seed = 1;                 // of the sampling (a training uses its own seed instead)
  // Pieces kept whole and given the ids right after the specials, in order (a masked-LM training
  // adds "<mask>", id 4); none by default.
  std::vector<std::string> user_defined_symbols;
};

}  // namespace transformer
