#pragma once
// Corpus BLEU computed exactly as sacreBLEU 2.x does with its defaults (Post 2018, "A Call for
// Clarity in Reporting BLEU Scores"), so that its numbers can be compared with published ones:
//   - the 13a tokenizer (mteval-v13a.pl as reimplemented by sacreBLEU), or `none` (whitespace only);
//   - n-grams of order 1..4, clipped against the per-n-gram maximum count over all references;
//   - the closest reference length per segment (ties go to the shorter), summed over the corpus;
//   - exponential smoothing ("exp", mteval's): the k-th order with zero matches gets precision
//     100 / (2^k · total) instead of 0;
//   - BP = exp(1 − r/c) when c < r, and BLEU = BP · exp(mean of the log precisions).
// Text is UTF-8; it is processed as Unicode code points, as sacreBLEU's Python strings are.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace transformer {

enum class BleuTokenize { k13a, kNone };

// "13a" or "none" → the enum; anything else throws transformer::Error listing the choices.
BleuTokenize parse_bleu_tokenize(std::string_view name);
const char* bleu_tokenize_name(BleuTokenize tokenize);

struct BleuOptions {
  bool lowercase = false;  // Python's str.lower() before tokenizing
  BleuTokenize tokenize = BleuTokenize::k13a;
};

// The sufficient statistics of BLEU; those of a corpus are the sums of its segments'.
struct BleuStats {
  static constexpr int kMaxOrder = 4;
  int64_t hyp_len = 0;  // hypothesis tokens
  int64_t ref_len = 0;  // effective reference tokens (closest reference length)
  int64_t correct[kMaxOrder] = {};  // clipped n-gram matches, n = 1..4
  int64_t total[kMaxOrder] = {};    // hypothesis n-grams, n = 1..4

  BleuStats& operator+=(const BleuStats& other);
};

struct BleuScore {
  double score = 0;                                  // 0..100
  double precisions[BleuStats::kMaxOrder] = {};      // 0..100, smoothed
  double bp = 0;                                     // brevity penalty
  double ratio = 0;                                  // hyp_len / ref_len (0 when ref_len is 0)
  BleuStats stats;

  // sacreBLEU's line: "BLEU = 35.12 65.3/42.1/29.8/21.0 (BP = 0.962 ratio = 0.963 hyp_len = 12345 ref_len = 12821)".
  std::string format() const;
};

// The tokenizers on their own (input UTF-8, output UTF-8 with single spaces between tokens).
// tokenize_13a does not strip or lowercase; the metric rstrips (and optionally lowercases) first.
std::string tokenize_13a(std::string_view line);

// One segment's statistics: `hyp` against every string in `refs` (at least one; an empty reference
// is a reference of length 0). Invalid UTF-8 throws transformer::Error.
BleuStats bleu_segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs,
                             const BleuOptions& options = {});

// The score from (corpus) statistics: sacreBLEU's compute_bleu with smooth_method="exp".
BleuScore compute_bleu(const BleuStats& stats);

// Corpus BLEU. `refs` holds reference streams as sacreBLEU takes them: refs[k][i] is the k-th
// reference of segment i, and every stream has as many lines as `hyps`. Errors name the line.
BleuScore corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const BleuOptions& options = {});

}  // namespace transformer
