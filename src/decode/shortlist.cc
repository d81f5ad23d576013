#include "decode/shortlist.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "io/atomic_file.h"

namespace tfm {

void ShortlistOptions::validate() const {
  TFM_CHECK(per_source >= 0, "targets per source token must be >= 0, got ", per_source);
  TFM_CHECK(frequent >= 0, "the number of frequent target tokens must be >= 0, got ", frequent);
  TFM_CHECK(per_source > 0 || frequent > 0, "a shortlist needs targets per source token or frequent tokens, got 0 and 0");
}

namespace {

constexpr const char* kMagic = "tfm-shortlist 1";

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
  write_file_atomic(path, [&](std::ostream& out) {
    out << kMagic << "\nvocab_size " << vocab_size_ << "\nvocab_fingerprint "
        << (fingerprint_.empty() ? "-" : fingerprint_) << "\nfrequent";
    for (int32_t t : frequent_) out << ' ' << t;
    out << '\n';
    for (size_t s = 0; s < by_source_.size(); ++s) {
      if (by_source_[s].empty()) continue;
      out << s << '\t';
      for (size_t j = 0; j < by_source_[s].size(); ++j) out << (j ? " " : "") << by_source_[s][j];
      out << '\n';
    }
  });
}

const std::vector<int32_t>& Shortlist::targets_of(int32_t s) const {
  TFM_CHECK(s >= 0 && s < vocab_size_, "shortlist: source token id ", s, " is outside the vocabulary [0, ", vocab_size_,
            ")");
  return by_source_[static_cast<size_t>(s)];
}

Shortlist Shortlist::load(const std::string& path, int64_t expected_vocab_size) {
  std::istringstream in(read_file(path));
  std::string line;
  int64_t n = 0;
  auto next = [&](const char* what) {
    TFM_CHECK(std::getline(in, line), path, ": ends before its ", what, " line (line ", n + 1, ")");
    ++n;
  };
  next("header");
  TFM_CHECK(line == kMagic, path, ": not a shortlist file: its first line is '", line.substr(0, 60),
            "', expected '", kMagic, "'");
  Shortlist out;
  next("vocab_size");
  {
    std::istringstream f(line);
    std::string key, value, extra;
    f >> key >> value;
    TFM_CHECK(key == "vocab_size" && !(f >> extra), path, ": line 2 must be 'vocab_size N', got '",
              line.substr(0, 60), "'");
    char* end = nullptr;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    TFM_CHECK(!value.empty() && *end == '\0' && v >= 1 && v <= (1LL << 30), path, ": line 2: '", value,
              "' is not a vocabulary size");
    out.vocab_size_ = v;
    TFM_CHECK(expected_vocab_size <= 0 || v == expected_vocab_size, path, ": the shortlist was built for a vocabulary of ",
              v, " tokens but the model has ", expected_vocab_size);
  }
  next("vocab_fingerprint");
  {
    std::istringstream f(line);
    std::string key, value, extra;
    f >> key >> value;
    TFM_CHECK(key == "vocab_fingerprint" && !value.empty() && !(f >> extra), path,
              ": line 3 must be 'vocab_fingerprint F' (or '-'), got '", line.substr(0, 60), "'");
    out.fingerprint_ = value == "-" ? "" : value;
  }
  next("frequent");
  {
    std::istringstream f(line);
    std::string word;
    f >> word;
    TFM_CHECK(word == "frequent", path, ": line 4 must be 'frequent ID...', got '", line.substr(0, 60), "'");
    while (f >> word) out.frequent_.push_back(parse_id(word, out.vocab_size_, path, n));
  }
  out.by_source_.resize(static_cast<size_t>(out.vocab_size_));
  std::vector<char> listed(static_cast<size_t>(out.vocab_size_), 0);
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    TFM_CHECK(tab != std::string::npos, path, ": line ", n, " has no tab: expected 'SOURCE_ID<TAB>TARGET_ID...'");
    const int32_t s = parse_id(line.substr(0, tab), out.vocab_size_, path, n);
    TFM_CHECK(!listed[s], path, ": line ", n, ": source id ", s, " has a second line");
    listed[s] = 1;
    std::vector<int32_t>& targets = out.by_source_[static_cast<size_t>(s)];
    std::istringstream f(line.substr(tab + 1));
    std::string word;
    while (f >> word) targets.push_back(parse_id(word, out.vocab_size_, path, n));
  }
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
