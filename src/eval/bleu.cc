#include "eval/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "core/error.h"
#include "eval/text.h"

namespace transformer {

using namespace tfm;

namespace {

// str.replace(from, to): every non-overlapping occurrence, left to right.
void replace_all(std::u32string& s, std::u32string_view from, std::u32string_view to) {
  if (s.find(from) == std::u32string::npos) return;
  std::u32string out;
  out.reserve(s.size());
  size_t start = 0;
  for (size_t pos; (pos = s.find(from, start)) != std::u32string::npos; start = pos + from.size()) {
    out.append(s, start, pos - start);
    out.append(to);
  }
  out.append(s, start, std::u32string::npos);
  s = std::move(out);
}

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }  // [0-9]: ASCII only, unlike \d
bool is_period_comma(char32_t c) { return c == U'.' || c == U','; }

// The first character class of mteval-v13a / sacreBLEU's TokenizerRegexp,
// [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII punctuation and symbols except ' , - . (which have their own
// rules or stay attached), plus the space itself (harmless: spaces are collapsed at the end).
bool is_split_symbol(char32_t c) {
  return (c >= U'{' && c <= U'~') || (c >= U'[' && c <= U'`') || (c >= U' ' && c <= U'&') ||
         (c >= U'(' && c <= U'+') || (c >= U':' && c <= U'@') || c == U'/';
}

// re.sub of a two-character pattern (first, second) → replacement: Python scans left to right and a
// match consumes both characters, so the second can never start the next match. That detail decides
// cases like "a.,b" → "a . ,b" after the period/comma rule, so it is kept exactly.
template <class First, class Second, class Emit>
std::u32string sub_pairs(const std::u32string& s, First first, Second second, Emit emit) {
  std::u32string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

std::u32string join_words(const std::vector<std::u32string_view>& words) {
  std::u32string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out.push_back(U' ');
    out.append(words[i]);
  }
  return out;
}

std::u32string tokenize_13a_u32(std::u32string_view line) {
  // The language-independent part of mteval-v13a: drop <skipped>, join hyphenated line breaks,
  // turn the four HTML entities mteval unescapes back into characters (in this order, so "&amp;lt;"
  // becomes "<" as it does there).
  std::u32string s(line);
  replace_all(s, U"<skipped>", U"");
  replace_all(s, U"-\n", U"");
  replace_all(s, U"\n", U" ");
  if (s.find(U'&') != std::u32string::npos) {
    replace_all(s, U"&quot;", U"\"");
    replace_all(s, U"&amp;", U"&");
    replace_all(s, U"&lt;", U"<");
    replace_all(s, U"&gt;", U">");
  }
  s = U" " + s + U" ";

  // Symbols become tokens of their own.
  std::u32string t;
  t.reserve(s.size() * 2);
  for (const char32_t c : s) {
    if (is_split_symbol(c)) {
      t.push_back(U' ');
      t.push_back(c);
      t.push_back(U' ');
    } else {
      t.push_back(c);
    }
  }
  const auto not_digit = [](char32_t c) { return !is_digit(c); };
  // Period and comma split off unless preceded by a digit: ([^0-9])([\.,]) → "\1 \2 ".
  t = sub_pairs(t, not_digit, is_period_comma, [](std::u32string& o, char32_t a, char32_t b) {
    o.push_back(a), o.push_back(U' '), o.push_back(b), o.push_back(U' ');
  });
  // ... and unless followed by a digit: ([\.,])([^0-9]) → " \1 \2". So "3.5" and "1,200" stay whole.
  t = sub_pairs(t, is_period_comma, not_digit, [](std::u32string& o, char32_t a, char32_t b) {
    o.push_back(U' '), o.push_back(a), o.push_back(U' '), o.push_back(b);
  });
  // A dash after a digit splits off: ([0-9])(-) → "\1 \2 ". So "3-4" → "3 - 4" but "a-b" stays.
  t = sub_pairs(t, is_digit, [](char32_t c) { return c == U'-'; }, [](std::u32string& o, char32_t a, char32_t b) {
    o.push_back(a), o.push_back(U' '), o.push_back(b), o.push_back(U' ');
  });
  return join_words(split_whitespace(t));
}

// A segment after sacreBLEU's _preprocess_segment: optionally lowercased, right-stripped, tokenized,
// then its words joined by single spaces. An n-gram is then a substring from the start of one word to
// the end of another, so n-grams are keyed by views into `text` without copying.
struct Segment {
  std::u32string text;
  std::vector<std::pair<size_t, size_t>> words;  // [begin, end) of each word in text

  std::u32string_view ngram(size_t first, int n) const {
    const size_t b = words[first].first, e = words[first + n - 1].second;
    return std::u32string_view(text).substr(b, e - b);
  }
};

Segment preprocess(std::string_view line, const BleuOptions& options, std::string_view where) {
  std::u32string s = decode_utf8(line, where);
  if (options.lowercase) s = unicode_lower(s);
  const std::u32string_view stripped = rstrip_whitespace(s);
  Segment seg;
  seg.text = options.tokenize == BleuTokenize::k13a ? tokenize_13a_u32(stripped)
                                                    : join_words(split_whitespace(stripped));
  for (size_t i = 0; i < seg.text.size();) {
    const size_t end = std::min(seg.text.find(U' ', i), seg.text.size());
    seg.words.emplace_back(i, end);
    i = end + 1;
  }
  return seg;
}

using NgramCounts = std::unordered_map<std::u32string_view, int64_t>;

// hyp against refs: counts clipped by the largest count of that n-gram in any one reference.
BleuStats segment_stats(const Segment& hyp, const std::vector<Segment>& refs) {
  TFM_CHECK(!refs.empty(), "BLEU needs at least one reference per segment");
  constexpr int kN = BleuStats::kMaxOrder;
  NgramCounts ref_max;
  int64_t closest = -1;
  const auto hyp_len = static_cast<int64_t>(hyp.words.size());
  for (const Segment& ref : refs) {
    NgramCounts counts;
    for (int n = 1; n <= kN; ++n)
      for (size_t i = 0; i + n <= ref.words.size(); ++i) ++counts[ref.ngram(i, n)];
    for (const auto& [ngram, count] : counts) ref_max[ngram] = std::max(ref_max[ngram], count);
    // The closest reference length; on a tie the shorter one (which is what mteval does too).
    const auto len = static_cast<int64_t>(ref.words.size());
    if (closest < 0 || std::llabs(hyp_len - len) < std::llabs(hyp_len - closest) ||
        (std::llabs(hyp_len - len) == std::llabs(hyp_len - closest) && len < closest))
      closest = len;
  }
  BleuStats stats;
  stats.hyp_len = hyp_len;
  stats.ref_len = closest;
  for (int n = 1; n <= kN; ++n) {
    NgramCounts counts;
    for (size_t i = 0; i + n <= hyp.words.size(); ++i) ++counts[hyp.ngram(i, n)];
    for (const auto& [ngram, count] : counts) {
      stats.total[n - 1] += count;
      const auto it = ref_max.find(ngram);
      if (it != ref_max.end()) stats.correct[n - 1] += std::min(count, it->second);
    }
  }
  return stats;
}

}  // namespace

BleuTokenize parse_bleu_tokenize(std::string_view name) {
  if (name == "13a") return BleuTokenize::k13a;
  if (name == "none") return BleuTokenize::kNone;
  throw Error(cat("unknown BLEU tokenizer '", name, "' (choices: 13a, none)"));
}

const char* bleu_tokenize_name(BleuTokenize tokenize) { return tokenize == BleuTokenize::k13a ? "13a" : "none"; }

BleuStats& BleuStats::operator+=(const BleuStats& other) {
  hyp_len += other.hyp_len;
  ref_len += other.ref_len;
  for (int n = 0; n < kMaxOrder; ++n) {
    correct[n] += other.correct[n];
    total[n] += other.total[n];
  }
  return *this;
}

std::string BleuScore::format() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %lld ref_len = %lld)", score,
                precisions[0], precisions[1], precisions[2], precisions[3], bp, ratio,
                static_cast<long long>(stats.hyp_len), static_cast<long long>(stats.ref_len));
  return buf;
}

std::string tokenize_13a(std::string_view line) {
  return encode_utf8(tokenize_13a_u32(decode_utf8(line, "input")));
}

BleuStats bleu_segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs,
                             const BleuOptions& options) {
  std::vector<Segment> ref_segments;
  for (size_t k = 0; k < refs.size(); ++k)
    ref_segments.push_back(preprocess(refs[k], options, cat("reference ", k + 1)));
  return segment_stats(preprocess(hyp, options, "hypothesis"), ref_segments);
}

BleuScore compute_bleu(const BleuStats& stats) {
  // Every step mirrors sacreBLEU's compute_bleu, in the same floating-point order, so the scores agree
  // to the last bit rather than merely to the printed digits.
  constexpr int kN = BleuStats::kMaxOrder;
  BleuScore s;
  s.stats = stats;
  s.ratio = stats.ref_len > 0 ? static_cast<double>(stats.hyp_len) / static_cast<double>(stats.ref_len) : 0.0;
  s.bp = 1.0;
  if (stats.hyp_len < stats.ref_len)
    s.bp = stats.hyp_len > 0 ? std::exp(1.0 - static_cast<double>(stats.ref_len) / static_cast<double>(stats.hyp_len))
                             : 0.0;
  if (std::all_of(stats.correct, stats.correct + kN, [](int64_t c) { return c == 0; })) {
    s.score = 0.0;  // no match at all: 0 with all precisions 0, whatever the smoothing
    return s;
  }
  double smooth = 1.0;
  for (int n = 0; n < kN; ++n) {
    // No hypothesis n-grams of this order (every segment shorter than n): the precision stays 0 and
    // so does the score, as in sacreBLEU without effective_order.
    if (stats.total[n] == 0) break;
    if (stats.correct[n] == 0) {
      smooth *= 2;  // the k-th order with no matches counts as 1/2^k of a match
      s.precisions[n] = 100.0 / (smooth * static_cast<double>(stats.total[n]));
    } else {
      s.precisions[n] = 100.0 * static_cast<double>(stats.correct[n]) / static_cast<double>(stats.total[n]);
    }
  }
  double log_sum = 0;
  for (int n = 0; n < kN; ++n) log_sum += s.precisions[n] == 0.0 ? -9999999999.0 : std::log(s.precisions[n]);
  s.score = s.bp * std::exp(log_sum / kN);
  return s;
}

BleuScore corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const BleuOptions& options) {
  TFM_CHECK(!refs.empty(), "BLEU needs at least one reference stream");
  for (size_t k = 0; k < refs.size(); ++k)
    TFM_CHECK(refs[k].size() == hyps.size(), "reference stream ", k + 1, " has ", refs[k].size(),
              " lines but there are ", hyps.size(), " hypotheses");
  BleuStats total;
  std::vector<Segment> ref_segments(refs.size());
  for (size_t i = 0; i < hyps.size(); ++i) {
    for (size_t k = 0; k < refs.size(); ++k)
      ref_segments[k] = preprocess(refs[k][i], options, cat("reference ", k + 1, " line ", i + 1));
    total += segment_stats(preprocess(hyps[i], options, cat("hypothesis line ", i + 1)), ref_segments);
  }
  return compute_bleu(total);
}

}  // namespace transformer
