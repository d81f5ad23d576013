#include "eval/text.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "core/error.h"

namespace tfm {

namespace {

struct LowerRun {
  char32_t first;
  int32_t count, stride, delta;
};
struct CodeRange {
  char32_t first, last;
};

#include "eval/unicode_tables.inc"

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

bool in_ranges(const CodeRange* begin, const CodeRange* end, char32_t c) {
  // The first range whose end is ≥ c is the only one that can hold c.
  const CodeRange* r = std::lower_bound(begin, end, c, [](const CodeRange& r, char32_t v) { return r.last < v; });
  return r != end && r->first <= c;
}

bool case_ignorable(char32_t c) { return in_ranges(std::begin(kCaseIgnorable), std::end(kCaseIgnorable), c); }
bool cased_not_ignorable(char32_t c) {
  return in_ranges(std::begin(kCasedNotIgnorable), std::end(kCasedNotIgnorable), c);
}

// The runs expanded once into a sorted code point → lowercase table (about 1,400 entries). Strided runs
// interleave, so searching the runs themselves would need more care than this costs.
const std::vector<std::pair<char32_t, char32_t>>& lower_table() {
  static const std::vector<std::pair<char32_t, char32_t>> table = [] {
    std::vector<std::pair<char32_t, char32_t>> t;
    for (const LowerRun& r : kLowerRuns)
      for (int32_t i = 0; i < r.count; ++i) {
        const char32_t c = r.first + static_cast<char32_t>(i * r.stride);
        t.emplace_back(c, static_cast<char32_t>(static_cast<int32_t>(c) + r.delta));
      }
    std::sort(t.begin(), t.end());
    return t;
  }();
  return table;
}

char32_t lower_one(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;  // the common case, without a search
  const auto& t = lower_table();
  const auto it = std::lower_bound(t.begin(), t.end(), c, [](const auto& e, char32_t v) { return e.first < v; });
  return (it != t.end() && it->first == c) ? it->second : c;
}

// Python's Final_Sigma rule (Unicode SpecialCasing): capital sigma at `i` becomes final ς when a cased
// letter precedes it and none follows, skipping case-ignorable characters (apostrophes, combining
// marks, ...) in both directions.
bool final_sigma(std::u32string_view s, size_t i) {
  size_t j = i;
  while (j > 0 && case_ignorable(s[j - 1])) --j;
  if (j == 0 || !cased_not_ignorable(s[j - 1])) return false;
  j = i + 1;
  while (j < s.size() && case_ignorable(s[j])) ++j;
  return j == s.size() || !cased_not_ignorable(s[j]);
}

}  // namespace

std::u32string decode_utf8(std::string_view text, std::string_view where) {
  std::u32string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char b = p[i];
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    }
    // Lead byte → sequence length and the allowed range of the second byte, which is where overlong
    // forms (E0, F0), surrogates (ED) and code points above U+10FFFF (F4) are excluded.
    int len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b == 0xE0) len = 3, lo = 0xA0;
    else if (b == 0xED) len = 3, hi = 0x9F;
    else if (b >= 0xE1 && b <= 0xEF) len = 3;
    else if (b == 0xF0) len = 4, lo = 0x90;
    else if (b == 0xF4) len = 4, hi = 0x8F;
    else if (b >= 0xF1 && b <= 0xF3) len = 4;
    bool ok = len > 0 && i + len <= n;
    for (int k = 1; ok && k < len; ++k) {
      const unsigned char c = p[i + k];
      ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
    }
    TFM_CHECK(ok, where, ": invalid UTF-8 at byte offset ", i, " (", hex_byte(b), ")",
              len > 0 && i + len > n ? ", a truncated sequence" : "");
    char32_t cp = b & (0x7F >> len);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (p[i + k] & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

bool is_unicode_space(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

std::vector<std::u32string_view> split_whitespace(std::u32string_view text) {
  std::vector<std::u32string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_unicode_space(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !is_unicode_space(text[i])) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

std::u32string_view rstrip_whitespace(std::u32string_view text) {
  size_t end = text.size();
  while (end > 0 && is_unicode_space(text[end - 1])) --end;
  return text.substr(0, end);
}

std::u32string unicode_lower(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    if (c == 0x130) {  // İ is the one code point whose lowercase is two: i + combining dot above
      out.push_back(U'i');
      out.push_back(0x307);
    } else if (c == 0x3A3) {
      out.push_back(final_sigma(text, i) ? 0x3C2 : 0x3C3);
    } else {
      out.push_back(lower_one(c));
    }
  }
  return out;
}

std::vector<std::string> split_text_lines(std::string_view text, std::string_view name) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    decode_utf8(lines.back(), cat(name, " line ", lines.size()));  // validation only
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> read_text_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TFM_CHECK(in, "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  TFM_CHECK(!in.bad(), "cannot read ", path);
  return split_text_lines(buf.str(), path);
}

}  // namespace tfm
