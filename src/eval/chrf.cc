#include "eval/chrf.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "core/error.h"
#include "eval/text.h"

namespace transformer {

using namespace tfm;

namespace {

using NgramCounts = std::unordered_map<std::u32string_view, int64_t>;

// The n-gram counters of one segment, one per order (character orders, then word orders). Keys are
// views into `chars` and `words`, so a Prepared must stay where it is while its counters are used.
struct Prepared {
  std::u32string chars;  // the text the character n-grams come from
  std::u32string words;  // word tokens joined by single spaces (chrF++ only)
  std::vector<NgramCounts> counts;
};

bool is_ascii_punct(char32_t c) {  // Python's string.punctuation
  return (c >= U'!' && c <= U'/') || (c >= U':' && c <= U'@') || (c >= U'[' && c <= U'`') || (c >= U'{' && c <= U'~');
}

// chrF++'s word tokens: whitespace-separated words with one punctuation character split off the end,
// or else off the start (so "(hi)" gives "(hi" and ")", as in sacreBLEU and the original chrF++.py).
std::vector<std::u32string_view> punctuation_words(std::u32string_view text) {
  std::vector<std::u32string_view> out;
  for (const std::u32string_view w : split_whitespace(text)) {
    if (w.size() == 1) {
      out.push_back(w);
    } else if (is_ascii_punct(w.back())) {
      out.push_back(w.substr(0, w.size() - 1));
      out.push_back(w.substr(w.size() - 1));
    } else if (is_ascii_punct(w.front())) {
      out.push_back(w.substr(0, 1));
      out.push_back(w.substr(1));
    } else {
      out.push_back(w);
    }
  }
  return out;
}

// Prepared is filled in place (not returned by value) because the counters hold views into its strings.
void prepare(std::string_view line, const ChrfOptions& options, std::string_view where, Prepared& p) {
  std::u32string text = decode_utf8(line, where);
  if (options.lowercase) text = unicode_lower(text);
  p.chars.clear();
  if (options.whitespace) {
    p.chars = text;
  } else {
    for (const std::u32string_view w : split_whitespace(text)) p.chars.append(w);
  }
  p.counts.assign(options.char_order + options.word_order, {});
  const std::u32string_view chars(p.chars);
  for (int n = 1; n <= options.char_order; ++n)
    for (size_t i = 0; i + n <= chars.size(); ++i) ++p.counts[n - 1][chars.substr(i, n)];
  if (options.word_order == 0) return;

  const std::vector<std::u32string_view> tokens = punctuation_words(text);
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) of each token in p.words
  p.words.clear();
  for (const std::u32string_view t : tokens) {
    if (!spans.empty()) p.words.push_back(U' ');
    spans.emplace_back(p.words.size(), p.words.size() + t.size());
    p.words.append(t);
  }
  const std::u32string_view words(p.words);
  for (int n = 1; n <= options.word_order; ++n)
    for (size_t i = 0; i + n <= spans.size(); ++i)
      ++p.counts[options.char_order + n - 1][words.substr(spans[i].first, spans[i + n - 1].second - spans[i].first)];
}

// sacreBLEU's _compute_f_score, step for step and in the same floating-point order.
double f_score(const std::vector<int64_t>& st, const ChrfOptions& options) {
  const double eps = 1e-16;
  const int orders = options.char_order + options.word_order;
  const int factor = options.beta * options.beta;
  double score = 0, avg_prec = 0, avg_rec = 0;
  int effective_order = 0;
  for (int i = 0; i < orders; ++i) {
    const auto n_hyp = st[3 * i], n_ref = st[3 * i + 1], n_match = st[3 * i + 2];
    const double prec = n_hyp > 0 ? static_cast<double>(n_match) / static_cast<double>(n_hyp) : eps;
    const double rec = n_ref > 0 ? static_cast<double>(n_match) / static_cast<double>(n_ref) : eps;
    const double denom = factor * prec + rec;
    score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
    if (n_hyp > 0 && n_ref > 0) {  // orders that exist on both sides
      avg_prec += prec;
      avg_rec += rec;
      ++effective_order;
    }
  }
  if (options.eps_smoothing) return 100 * score / orders;
  if (effective_order == 0) {
    avg_prec = avg_rec = 0.0;
  } else {
    avg_prec /= effective_order;
    avg_rec /= effective_order;
  }
  if (avg_prec + avg_rec == 0) return 0.0;
  score = (1 + factor) * avg_prec * avg_rec;
  score /= factor * avg_prec + avg_rec;
  return 100 * score;
}

ChrfStats best_stats(const Prepared& hyp, const std::vector<Prepared>& refs, const ChrfOptions& options) {
  TFM_CHECK(!refs.empty(), "chrF needs at least one reference per segment");
  const size_t orders = hyp.counts.size();
  ChrfStats best;
  double best_f = -1.0;
  std::vector<int64_t> st(3 * orders);
  for (const Prepared& ref : refs) {
    for (size_t o = 0; o < orders; ++o) {
      int64_t hyp_count = 0, ref_count = 0, match = 0;
      for (const auto& [ngram, count] : hyp.counts[o]) {
        hyp_count += count;
        const auto it = ref.counts[o].find(ngram);
        if (it != ref.counts[o].end()) match += std::min(count, it->second);
      }
      for (const auto& [ngram, count] : ref.counts[o]) ref_count += count;
      // Hypothesis n-grams of an order the reference lacks entirely are not counted (sacreBLEU's
      // rule), so a reference too short for 6-grams does not punish the hypothesis' precision.
      st[3 * o] = ref.counts[o].empty() ? 0 : hyp_count;
      st[3 * o + 1] = ref_count;
      st[3 * o + 2] = match;
    }
    const double f = f_score(st, options);
    if (f > best_f) {
      best_f = f;
      best.values = st;
    }
  }
  return best;
}

void check_options(const ChrfOptions& o) {
  TFM_CHECK(o.char_order >= 0 && o.word_order >= 0 && o.char_order <= kMaxChrfOrder &&
                o.word_order <= kMaxChrfOrder && o.char_order + o.word_order > 0,
            "chrF needs char_order (", o.char_order, ") + word_order (", o.word_order, ") > 0, both in [0, ",
            kMaxChrfOrder, "]");
  TFM_CHECK(o.beta >= 0, "chrF beta must be ≥ 0, got ", o.beta);
}

}  // namespace

std::string ChrfOptions::name() const { return cat("chrF", beta, std::string(word_order, '+')); }

ChrfStats& ChrfStats::operator+=(const ChrfStats& other) {
  if (values.empty()) values.assign(other.values.size(), 0);
  TFM_CHECK(values.size() == other.values.size(), "chrF statistics of different orders: ", values.size(), " vs ",
            other.values.size(), " numbers");
  for (size_t i = 0; i < values.size(); ++i) values[i] += other.values[i];
  return *this;
}

std::string ChrfScore::format() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, " = %.2f", score);
  return name + buf;
}

ChrfStats chrf_segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs,
                             const ChrfOptions& options) {
  check_options(options);
  std::vector<Prepared> prepared(refs.size());
  for (size_t k = 0; k < refs.size(); ++k) prepare(refs[k], options, cat("reference ", k + 1), prepared[k]);
  Prepared h;
  prepare(hyp, options, "hypothesis", h);
  return best_stats(h, prepared, options);
}

ChrfScore compute_chrf(const ChrfStats& stats, const ChrfOptions& options) {
  check_options(options);
  ChrfScore s;
  s.name = options.name();
  s.stats = stats;
  const size_t want = 3 * static_cast<size_t>(options.char_order + options.word_order);
  if (s.stats.values.empty()) s.stats.values.assign(want, 0);  // an empty corpus
  TFM_CHECK(s.stats.values.size() == want, "chrF statistics hold ", s.stats.values.size(), " numbers, expected ", want);
  s.score = f_score(s.stats.values, options);
  return s;
}

ChrfScore corpus_chrf(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const ChrfOptions& options) {
  check_options(options);
  TFM_CHECK(!refs.empty(), "chrF needs at least one reference stream");
  for (size_t k = 0; k < refs.size(); ++k)
    TFM_CHECK(refs[k].size() == hyps.size(), "reference stream ", k + 1, " has ", refs[k].size(),
              " lines but there are ", hyps.size(), " hypotheses");
  ChrfStats total;
  total.values.assign(3 * static_cast<size_t>(options.char_order + options.word_order), 0);
  std::vector<Prepared> prepared(refs.size());
  Prepared h;
  for (size_t i = 0; i < hyps.size(); ++i) {
    for (size_t k = 0; k < refs.size(); ++k)
      prepare(refs[k][i], options, cat("reference ", k + 1, " line ", i + 1), prepared[k]);
    prepare(hyps[i], options, cat("hypothesis line ", i + 1), h);
    total += best_stats(h, prepared, options);
  }
  return compute_chrf(total, options);
}

}  // namespace transformer
