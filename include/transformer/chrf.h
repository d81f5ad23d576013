#pragma once
// chrF (Popović 2015) computed exactly as sacreBLEU 2.x does with its defaults: character n-grams of
// order 1..6 over Unicode code points with whitespace removed, no word n-grams, β = 2.
//
// Statistics per order are (hypothesis n-grams, reference n-grams, clipped matches), summed over the
// corpus. With several references each segment takes the statistics of the reference that gives it
// the best segment-level score (the first one on a tie). The corpus score then averages precision and
// recall over the orders that have both hypothesis and reference n-grams (sacreBLEU's default,
// eps_smoothing=False) and takes F_β of the averages. eps_smoothing=True instead averages the per-order
// F_β with 1e-16 standing in for undefined values, like chrF++.py, Moses and NLTK.
// word_order = 2 gives chrF++.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace transformer {

inline constexpr int kMaxChrfOrder = 1000;  // far beyond use (6 and 2 are the standard orders)
struct ChrfOptions {
  int char_order = 6;           // both orders in [0, kMaxChrfOrder], their sum > 0
  int word_order = 0;           // 2 → chrF++
  int beta = 2;
  bool lowercase = false;       // Python's str.lower()
  bool whitespace = false;      // keep whitespace inside character n-grams
  bool eps_smoothing = false;

  std::string name() const;     // "chrF2", "chrF2++"
};

// 3 numbers per order (char orders first, then word orders): hypothesis n-grams (0 when the reference
// has none of that order), reference n-grams, matches.
struct ChrfStats {
  std::vector<int64_t> values;

  ChrfStats& operator+=(const ChrfStats& other);
};

struct ChrfScore {
  double score = 0;  // 0..100
  std::string name;  // "chrF2"
  ChrfStats stats;

  std::string format() const;  // sacreBLEU's "chrF2 = 57.31"
};

// One segment against its references (at least one), keeping the best reference's statistics.
ChrfStats chrf_segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs,
                             const ChrfOptions& options = {});

ChrfScore compute_chrf(const ChrfStats& stats, const ChrfOptions& options = {});

// refs[k][i] is the k-th reference of segment i, as for corpus_bleu. Errors name the line.
ChrfScore corpus_chrf(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const ChrfOptions& options = {});

}  // namespace transformer
