#pragma once
// BERT's masked-language-model corruption of a token sequence: a fraction of its ordinary tokens
// (never a special one) is chosen; of those, 80% become the mask token, 10% a random ordinary
// token and 10% stay, and the loss counts the chosen positions only. Each choice is a pure function
// of (seed, stream), so that a run's masks are the same whatever the threads, ranks or resumes.
#include <cstdint>
#include <vector>

namespace tfm {

// The mask token's piece: a masked-LM training's vocabulary must have it.
inline constexpr const char* kMaskPiece = "<mask>";

struct MaskingOptions {
  double fraction = 0.15;        // of a sequence's ordinary tokens, chosen for the loss
  int32_t mask_id = -1;          // the mask token's id (the vocabulary's "<mask>")
  int64_t vocab_size = 0;        // random replacements are drawn from the ordinary ids in [0, vocab_size)
  std::vector<int32_t> special;  // ids never chosen nor drawn (padding, unknown, bos, eos, the mask)
  uint64_t seed = 1;
};

struct MaskedSequence {
  std::vector<int32_t> input;    // the sequence with the chosen tokens replaced (or kept)
  std::vector<int32_t> targets;  // the original token at each chosen position, `ignore` elsewhere
  int64_t chosen = 0;            // how many positions the loss counts
};

// How many positions a sequence of `ordinary` non-special tokens has chosen: round(fraction ·
// ordinary), at least 1 when it has any.
int64_t masked_count(int64_t ordinary, double fraction);
// The same for the sequence `ids` (its special ids do not count).
int64_t masked_count(const std::vector<int32_t>& ids, const MaskingOptions& o);

// Masks `ids` with random stream `stream` (a training gives each sequence of each epoch its own).
// `ignore` marks the positions the loss skips (the model's pad_id).
MaskedSequence mask_tokens(const std::vector<int32_t>& ids, const MaskingOptions& o, uint64_t stream, int32_t ignore);

// The stream of example `index` in masking round `round` (a training's epoch).
uint64_t masking_stream(int64_t round, int64_t index);

}  // namespace tfm
