#include "decode/shortlist.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/checksum.h"

void transformer::ShortlistOptions::validate() const {
  TFM_CHECK(per_source >= 0, "targets per source token must be >= 0, got ", per_source);
  TFM_CHECK(frequent >= 0, "the number of frequent target tokens must be >= 0, got ", frequent);
  TFM_CHECK(per_source > 0 || frequent > 0, "a shortlist needs targets per source token or frequent tokens, got 0 and 0");
}

namespace tfm {

namespace {

constexpr std::string_view kMagic = "tfm-shortlist 2";
constexpr std::string_view kMagicVersion1 = "tfm-shortlist 1";  // no length or checksum: refused

void check_ids(const std::vector<int32_t>& ids, int64_t vocab_size, const char* side, size_t sentence) {
  for (int32_t id : ids)
    TFM_CHECK(id >= 0 && id < vocab_size, "shortlist: ", side, " sentence ", sentence + 1, " has token id ", id,
              " outside the vocabulary [0, ", vocab_size, ")");
}

// The distinct ids of a sentence, in first-seen order.
void distinct(const std::vector<int32_t>& ids, std::vector<char>& seen, std::vector<int32_t>& out) {
  out.clear();
  for (int32_t id : ids)
    if (!seen[id]) {
      seen[id] = 1;
      out.push_back(id);
    }
  for (int32_t id : out) seen[id] = 0;
}

// A whole decimal id in [0, vocab_size), or an error naming the file, line and word.
int32_t parse_id(const std::string& word, int64_t vocab_size, const std::string& path, int64_t line) {
  char* end = nullptr;
  const long long v = std::strtoll(word.c_str(), &end, 10);
  TFM_CHECK(!word.empty() && end && *end == '\0', path, ": line ", line, ": '", word, "' is not a token id");
  TFM_CHECK(v >= 0 && v < vocab_size, path, ": line ", line, ": token id ", v, " is outside the vocabulary [0, ",
            vocab_size, ")");
  return static_cast<int32_t>(v);
}

// A shortlist file's text read line by line, with the number of the line last read for errors.
struct LineReader {
  LineReader(const std::string& path, const std::string& text) : path(path), text(text) {}

  const std::string& path;
  const std::string& text;
  size_t pos = 0;  // where the next line starts
  int64_t n = 0;   // the number of the line last read
  std::string line;

  bool at_end() const { return pos >= text.size(); }
  void next(const char* what) {
    TFM_CHECK(pos < text.size(), path, ": ends before its ", what, " line (line ", n + 1, ")");
    const size_t end = std::min(text.find('\n', pos), text.size());
    line = text.substr(pos, end - pos);
    pos = end + 1;
    ++n;
  }
  // Splits a header line "KEY VALUE" and checks the key; returns the value.
  std::string field(const char* key, const char* form) const {
    std::istringstream f(line);
    std::string k, value, extra;
    f >> k >> value;
    TFM_CHECK(k == key && !value.empty() && !(f >> extra), path, ": line ", n, " must be '", form, "', got '",
              line.substr(0, 60), "'");
    return value;
  }
  int64_t count(const std::string& value, const char* what, long long max) const {
    char* end = nullptr;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    TFM_CHECK(!value.empty() && *end == '\0' && v >= 1 && v <= max, path, ": line ", n, ": '", value, "' is not ",
              what);
    return static_cast<int64_t>(v);
  }
};

// What a shortlist file's header records.
struct Header {
  int64_t vocab_size = 0;
  std::string fingerprint;  // "" when unknown
  int64_t lines = 0;        // after the header
  uint64_t checksum = 0;
  size_t digits = 0;  // where the checksum's digits start in the text
};

Header read_header(LineReader& in) {
  const std::string& path = in.path;
  const std::string& line = in.line;
  in.next("header");
  TFM_CHECK(line != kMagicVersion1, path, ": a shortlist of format version 1, which records neither its length nor a "
            "checksum and is no longer read: rebuild it with `transformer shortlist` (it takes seconds)");
  TFM_CHECK(line == kMagic, path, ": not a shortlist file: its first line is '", line.substr(0, 60), "', expected '",
            kMagic, "'");
  Header h;
  in.next("vocab_size");
  h.vocab_size = in.count(in.field("vocab_size", "vocab_size N"), "a vocabulary size", 1LL << 30);
  in.next("vocab_fingerprint");
  const std::string fingerprint = in.field("vocab_fingerprint", "vocab_fingerprint F (or -)");
  h.fingerprint = fingerprint == "-" ? "" : fingerprint;
  in.next("lines");
  h.lines = in.count(in.field("lines", "lines N"), "a number of lines", 1LL << 40);
  in.next("checksum");
  constexpr std::string_view kChecksumField = "checksum ";
  TFM_CHECK(line.starts_with(kChecksumField), path, ": line ", in.n, " must be 'checksum ", kChecksumPrefix,
            "HEX', got '", line.substr(0, 60), "'");
  h.checksum = parse_checksum(std::string_view(line).substr(kChecksumField.size()), cat(path, ": line ", in.n));
  h.digits = in.pos - line.size() - 1 + kChecksumField.size() + kChecksumPrefix.size();
  return h;
}

// The whole file is checked before any of its lists is read: the number of lines after the header,
// then the checksum of every byte, the checksum's own digits read as '0's.
void check_body(const LineReader& in, const Header& h) {
  const std::string& path = in.path;
  const std::string& text = in.text;
  const size_t pos = in.pos;
  const int64_t n = in.n, lines = h.lines;
  const int64_t body_lines =
      pos >= text.size() ? 0 : std::count(text.begin() + static_cast<std::ptrdiff_t>(pos), text.end(), '\n');
  TFM_CHECK(!text.ends_with('\n') || body_lines >= lines, path, ": truncated: ", body_lines, " of the ", lines,
            " lines after the header are there");
  TFM_CHECK(text.ends_with('\n'), path, ": truncated: its last line (", pos > text.size() ? n : n + body_lines + 1,
            ") has no end; the header records ", lines, " lines after it");
  TFM_CHECK(body_lines == lines, path, ": ", body_lines, " lines after the header, which records ", lines,
            ": the file was changed after it was written");
  Checksum sum;
  sum.update(std::string_view(text).substr(0, h.digits));
  sum.update(std::string(kChecksumDigits, '0'));
  sum.update(std::string_view(text).substr(h.digits + kChecksumDigits));
  TFM_CHECK(sum.value() == h.checksum, path, ": checksum mismatch: the header records ", format_checksum(h.checksum),
            " but the file hashes to ", format_checksum(sum.value()),
            ": it was corrupted after it was written; rebuild it with `transformer shortlist`");
}

// The line "frequent ID...".
std::vector<int32_t> read_frequent(LineReader& in, int64_t vocab_size) {
  in.next("frequent");
  std::vector<int32_t> frequent;
  std::istringstream f(in.line);
  std::string word;
  f >> word;
  TFM_CHECK(word == "frequent", in.path, ": line ", in.n, " must be 'frequent ID...', got '", in.line.substr(0, 60),
            "'");
  while (f >> word) frequent.push_back(parse_id(word, vocab_size, in.path, in.n));
  return frequent;
}

// The lines "SOURCE_ID<TAB>TARGET_ID...": [V] each source token's targets.
std::vector<std::vector<int32_t>> read_lists(LineReader& in, int64_t vocab_size) {
  std::vector<std::vector<int32_t>> by_source(static_cast<size_t>(vocab_size));
  std::vector<char> listed(static_cast<size_t>(vocab_size), 0);
  const std::string& line = in.line;
  while (!in.at_end()) {
    in.next("source");
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    TFM_CHECK(tab != std::string::npos, in.path, ": line ", in.n,
              " has no tab: expected 'SOURCE_ID<TAB>TARGET_ID...'");
    const int32_t s = parse_id(line.substr(0, tab), vocab_size, in.path, in.n);
    TFM_CHECK(!listed[s], in.path, ": line ", in.n, ": source id ", s, " has a second line");
    listed[s] = 1;
    std::vector<int32_t>& targets = by_source[static_cast<size_t>(s)];
    std::istringstream f(line.substr(tab + 1));
    std::string word;
    while (f >> word) targets.push_back(parse_id(word, vocab_size, in.path, in.n));
  }
  return by_source;
}

}  // namespace

Shortlist Shortlist::build(const std::vector<std::vector<int32_t>>& sources,
                           const std::vector<std::vector<int32_t>>& targets, int64_t vocab_size,
                           const ShortlistOptions& o, const std::string& vocab_fingerprint) {
  o.validate();
  TFM_CHECK(vocab_size >= 1, "shortlist: the vocabulary size must be >= 1, got ", vocab_size);
  TFM_CHECK(sources.size() == targets.size(), "shortlist: ", sources.size(), " source sentences but ",
            targets.size(), " target sentences");
  const size_t V = static_cast<size_t>(vocab_size);
  std::vector<int64_t> target_tokens(V, 0);
  std::vector<std::unordered_map<int32_t, int64_t>> together(V);  // c(s, t)
  std::vector<char> seen(V, 0);
  std::vector<int32_t> us, ut;
  for (size_t i = 0; i < sources.size(); ++i) {
    check_ids(sources[i], vocab_size, "source", i);
    check_ids(targets[i], vocab_size, "target", i);
    for (int32_t t : targets[i]) ++target_tokens[t];
    distinct(sources[i], seen, us);
    distinct(targets[i], seen, ut);
    for (int32_t s : us) {
      auto& row = together[s];
      for (int32_t t : ut) ++row[t];
    }
  }
  Shortlist out;
  out.vocab_size_ = vocab_size;
  out.fingerprint_ = vocab_fingerprint;
  // Most frequent target tokens first; ties by id, so that the result is a function of the data.
  std::vector<int32_t> order;
  for (size_t t = 0; t < V; ++t)
    if (target_tokens[t] > 0) order.push_back(static_cast<int32_t>(t));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return target_tokens[a] != target_tokens[b] ? target_tokens[a] > target_tokens[b] : a < b;
  });
  order.resize(std::min(order.size(), static_cast<size_t>(o.frequent)));
  out.frequent_ = order;
  // p(t | s) ∝ c(s, t) for a fixed s: rank each source token's targets by c(s, t), ties by id.
  out.by_source_.resize(V);
  std::vector<std::pair<int64_t, int32_t>> ranked;
  for (size_t s = 0; s < V; ++s) {
    ranked.clear();
    for (const auto& [t, n] : together[s]) ranked.emplace_back(-n, t);
    const size_t keep = std::min(ranked.size(), static_cast<size_t>(o.per_source));
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end());
    for (size_t j = 0; j < keep; ++j) out.by_source_[s].push_back(ranked[j].second);
  }
  return out;
}

void Shortlist::save(const std::string& path) const {
  std::ostringstream body;
  int64_t lines = 1;
  body << "frequent";
  for (int32_t t : frequent_) body << ' ' << t;
  body << '\n';
  for (size_t s = 0; s < by_source_.size(); ++s) {
    if (by_source_[s].empty()) continue;
    body << s << '\t';
    for (size_t j = 0; j < by_source_[s].size(); ++j) body << (j ? " " : "") << by_source_[s][j];
    body << '\n';
    ++lines;
  }
  // The checksum's digits are '0's while the text is hashed, then replaced by its value.
  const std::string head = cat(kMagic, "\nvocab_size ", vocab_size_, "\nvocab_fingerprint ",
                               fingerprint_.empty() ? "-" : fingerprint_, "\nlines ", lines, "\nchecksum ");
  std::string text = head + format_checksum(0) + "\n" + body.str();
  const size_t digits = head.size() + kChecksumPrefix.size();
  text.replace(digits, kChecksumDigits, format_checksum(checksum_of(text)).substr(kChecksumPrefix.size()));
  write_file_atomic(path, [&](std::ostream& out) { out << text; });
}

const std::vector<int32_t>& Shortlist::targets_of(int32_t s) const {
  TFM_CHECK(s >= 0 && s < vocab_size_, "shortlist: source token id ", s, " is outside the vocabulary [0, ", vocab_size_,
            ")");
  return by_source_[static_cast<size_t>(s)];
}

Shortlist Shortlist::load(const std::string& path, int64_t expected_vocab_size) {
  const std::string text = read_file(path);
  LineReader in(path, text);
  const Header h = read_header(in);
  check_body(in, h);
  TFM_CHECK(expected_vocab_size <= 0 || h.vocab_size == expected_vocab_size, path,
            ": the shortlist was built for a vocabulary of ", h.vocab_size, " tokens but the model has ",
            expected_vocab_size);
  Shortlist out;
  out.vocab_size_ = h.vocab_size;
  out.fingerprint_ = h.fingerprint;
  out.frequent_ = read_frequent(in, h.vocab_size);
  out.by_source_ = read_lists(in, h.vocab_size);
  return out;
}

void Shortlist::check_vocabulary(int64_t vocab_size, const std::string& fingerprint, const std::string& model) const {
  TFM_CHECK(vocab_size == vocab_size_, "the shortlist was built for a vocabulary of ", vocab_size_,
            " tokens but the model '", model, "' has ", vocab_size);
  TFM_CHECK(fingerprint.empty() || fingerprint_.empty() || fingerprint == fingerprint_,
            "the shortlist was built with another vocabulary (fingerprint ", fingerprint_, ") than the model '",
            model, "' (", fingerprint, ")");
}

std::vector<int32_t> Shortlist::select(const std::vector<std::vector<int32_t>>& sources,
                                       const std::vector<int32_t>& always) const {
  std::vector<char> in(static_cast<size_t>(vocab_size_), 0);
  auto add = [&](int32_t t) {
    TFM_CHECK(t >= 0 && t < vocab_size_, "shortlist: token id ", t, " is outside the vocabulary [0, ", vocab_size_,
              ")");
    in[t] = 1;
  };
  for (int32_t t : frequent_) add(t);
  for (int32_t t : always) add(t);
  for (const auto& sentence : sources)
    for (int32_t s : sentence) {
      TFM_CHECK(s >= 0 && s < vocab_size_, "shortlist: source token id ", s, " is outside the vocabulary [0, ",
                vocab_size_, ")");
      for (int32_t t : by_source_[static_cast<size_t>(s)]) in[t] = 1;
    }
  std::vector<int32_t> out;
  for (int64_t t = 0; t < vocab_size_; ++t)
    if (in[t]) out.push_back(static_cast<int32_t>(t));
  return out;
}

}  // namespace tfm
