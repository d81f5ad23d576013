// The BPE model (GPT-2, Llama, Qwen2, Mistral): a word starts as its characters (unknown ones as
// byte tokens <0xNN> with byte_fallback, or the unknown token), then the pair of neighbours with
// the lowest merge rank is merged until none is left, through a priority queue (n log n).
#include <queue>
#include <unordered_map>

#include "core/error.h"
#include "core/json_text.h"
#include "data/hf_components.h"

namespace tfm::hf {
namespace {

struct Options {
  std::string unk, prefix, suffix;
  bool has_unk = false, fuse_unk = false, byte_fallback = false, ignore_merges = false;
};

uint64_t pair_key(int32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

struct Merge {
  int32_t rank, id;
};

class Bpe : public Model {
 public:
  Bpe(Vocabulary vocab, std::unordered_map<uint64_t, Merge> merges, Options o)
      : vocab_(std::move(vocab)), merges_(std::move(merges)), o_(std::move(o)) {}

  void tokenize(std::string_view word, std::vector<int32_t>& ids) const override {
    if (word.empty()) return;
    if (o_.ignore_merges) {
      const int32_t id = vocab_.find(std::string(word));
      if (id >= 0) {
        ids.push_back(id);
        return;
      }
    }
    std::vector<int32_t> symbols = initial_symbols(word);
    merge_all(symbols);
    ids.insert(ids.end(), symbols.begin(), symbols.end());
  }
  const std::vector<std::string>& vocabulary() const override { return vocab_.by_id; }
  int32_t token_to_id(std::string_view token) const override { return vocab_.find(std::string(token)); }
  int32_t unk_id() const override { return o_.has_unk ? vocab_.find(o_.unk) : -1; }

 private:
  int32_t need_unk() const {
    const int32_t id = vocab_.find(o_.unk);
    TFM_CHECK(id >= 0, "BPE: the unknown token '", o_.unk, "' is not in the vocabulary");
    return id;
  }

  // One symbol per character (with the prefix after the first, the suffix on the last).
  std::vector<int32_t> initial_symbols(std::string_view word) const {
    std::vector<int32_t> out;
    bool pending_unk = false;
    std::string s;
    for (size_t i = 0; i < word.size();) {
      const size_t n = unicode::decode_at(word, i).second;
      s.assign(i > 0 ? o_.prefix : "");
      s.append(word.substr(i, n));
      i += n;
      if (i >= word.size()) s += o_.suffix;
      const int32_t id = vocab_.find(s);
      // Byte tokens do not flush a pending unknown token: the library adds it after them.
      if (id >= 0 || (o_.byte_fallback && add_bytes(s, out))) {
        if (id >= 0) {
          if (pending_unk) out.push_back(need_unk());
          pending_unk = false;
          out.push_back(id);
        }
        continue;
      }
      if (!o_.has_unk) continue;  // the library drops such a character
      if (pending_unk && !o_.fuse_unk) out.push_back(need_unk());
      pending_unk = true;
    }
    if (pending_unk) out.push_back(need_unk());
    return out;
  }

  // <0xNN> for each byte of `s` when the vocabulary has them all.
  bool add_bytes(const std::string& s, std::vector<int32_t>& out) const {
    std::vector<int32_t> bytes;
    static const char* hex = "0123456789ABCDEF";
    for (unsigned char b : s) {
      const int32_t id = vocab_.find(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
      if (id < 0) return false;
      bytes.push_back(id);
    }
    out.insert(out.end(), bytes.begin(), bytes.end());
    return true;
  }

  void merge_all(std::vector<int32_t>& sym) const;

  Vocabulary vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  Options o_;
};

void Bpe::merge_all(std::vector<int32_t>& sym) const {
  const int n = static_cast<int>(sym.size());
  std::vector<int> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  // (rank, position, new id): the lowest rank first, then the leftmost.
  using Entry = std::tuple<int32_t, int, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  auto push = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    const auto it = merges_.find(pair_key(sym[pos], sym[next[pos]]));
    if (it != merges_.end()) queue.emplace(it->second.rank, pos, it->second.id);
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!queue.empty()) {
    const auto [rank, pos, id] = queue.top();
    queue.pop();
    if (!alive[pos] || next[pos] < 0) continue;
    const int right = next[pos];
    const auto it = merges_.find(pair_key(sym[pos], sym[right]));
    if (it == merges_.end() || it->second.id != id) continue;  // a stale entry
    sym[pos] = id;
    alive[right] = false;
    next[pos] = next[right];
    if (next[pos] >= 0) prev[next[pos]] = pos;
    push(prev[pos]);
    push(pos);
  }
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    if (alive[i]) out.push_back(sym[i]);
  }
  sym = std::move(out);
}

std::pair<std::string, std::string> read_merge(const nlohmann::json& m, const Where& where) {
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
      where.fail(cat("must be two tokens separated by one space, got ", json_quote(m)));
    }
    return {s.substr(0, space), s.substr(space + 1)};
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) return {m[0], m[1]};
  where.fail(cat("must be \"a b\" or [\"a\", \"b\"], got ", json_quote(m)));
}

std::unordered_map<uint64_t, Merge> read_merges(const nlohmann::json& list, const Vocabulary& vocab,
                                                size_t prefix_len, const Where& where) {
  if (!list.is_array()) where.fail(cat("must be a list, got ", json_quote(list)));
  std::unordered_map<uint64_t, Merge> out;
  int32_t rank = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].is_string() && list[i].get<std::string>().rfind("#version", 0) == 0) continue;
    const auto [a, b] = read_merge(list[i], where[i]);
    const std::string merged = a + (b.size() >= prefix_len ? b.substr(prefix_len) : "");
    const int32_t ia = vocab.find(a), ib = vocab.find(b), im = vocab.find(merged);
    for (const auto* t : {&a, &b, &merged}) {
      if (vocab.find(*t) < 0) where[i].fail(cat("token '", *t, "' is not in the vocabulary"));
    }
    out[pair_key(ia, ib)] = {rank++, im};  // a repeated pair keeps its last rank, as the library's map
  }
  return out;
}

}  // namespace

std::unique_ptr<Model> make_bpe(const nlohmann::json& spec, const Where& where) {
  if (spec.contains("dropout") && !spec["dropout"].is_null()) {
    const auto& d = spec["dropout"];
    if (!d.is_number() || d.get<double>() != 0.0) {
      where["dropout"].fail(cat("BPE dropout ", json_quote(d), " is not supported (it makes encoding random)"));
    }
  }
  Options o;
  o.has_unk = spec.contains("unk_token") && !spec["unk_token"].is_null();
  o.unk = get_string(spec, "unk_token", "", where);
  o.prefix = get_string(spec, "continuing_subword_prefix", "", where);
  o.suffix = get_string(spec, "end_of_word_suffix", "", where);
  o.fuse_unk = get_bool(spec, "fuse_unk", false, where);
  o.byte_fallback = get_bool(spec, "byte_fallback", false, where);
  o.ignore_merges = get_bool(spec, "ignore_merges", false, where);
  Vocabulary vocab = read_vocabulary(required(spec, "vocab", where), where["vocab"]);
  auto merges = read_merges(required(spec, "merges", where), vocab, o.prefix.size(), where["merges"]);
  return std::make_unique<Bpe>(std::move(vocab), std::move(merges), std::move(o));
}

std::unique_ptr<Model> make_model(const nlohmann::json& spec, const Where& where) {
  const std::string type = type_of(spec, where);
  if (type == "BPE") return make_bpe(spec, where);
  if (type == "WordPiece") return make_wordpiece(spec, where);
  where["type"].fail(cat("model '", type, "' is not supported (supported: BPE, WordPiece)"));
}

}  // namespace tfm::hf
