#include "io/marian_yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "data/text.h"

namespace tfm {

namespace {

// A piece that is not valid UTF-8, for a message: printable ASCII as is, every other byte as \xNN,
// at most 60 bytes ("..." when cut).
std::string bytes_escaped(std::string_view piece) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < piece.size() && i < 60; ++i) {
    const auto c = static_cast<unsigned char>(piece[i]);
    if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else out += cat("\\x", hex[c >> 4], hex[c & 15]);
  }
  return piece.size() > 60 ? out + "..." : out;
}

// " (line 12)", or nothing where yaml-cpp has no mark.
std::string at_line(const YAML::Mark& mark) {
  return mark.is_null() || mark.line < 0 ? std::string() : cat(" (line ", mark.line + 1, ")");
}

const char* kind_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Scalar: return "scalar";
    case YAML::NodeType::Sequence: return "sequence";
    case YAML::NodeType::Map: return "mapping";
    case YAML::NodeType::Undefined: break;
  }
  return "nothing";
}

// The parsed document; yaml-cpp's errors become tfm::Error naming `where` and the line.
YAML::Node load(std::string_view text, const std::string& where) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw Error(cat(where, at_line(e.mark), ": not valid YAML: ", e.msg));
  }
}

// A non-negative decimal integer (what Marian writes), or nullopt; `overflow` tells one too large.
std::optional<uint64_t> parse_index(const std::string& s, bool& overflow) {
  overflow = false;
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) {
    overflow = true;
    return std::nullopt;
  }
  return v;
}

// yaml-cpp's rule for a boolean's case (convert<bool>): all lower, all upper, or an upper first.
bool flexible_case(const std::string& s) {
  if (s.empty()) return true;
  const bool first_upper = std::isupper(static_cast<unsigned char>(s[0]));
  const bool rest_upper =
      std::all_of(s.begin() + 1, s.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
  const bool rest_lower =
      std::all_of(s.begin() + 1, s.end(), [](char c) { return !std::isupper(static_cast<unsigned char>(c)); });
  return first_upper ? rest_upper || rest_lower : rest_lower;
}

std::optional<bool> parse_bool(const std::string& s) {
  if (!flexible_case(s)) return std::nullopt;
  std::string lower = s;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* t : {"y", "yes", "true", "on"})
    if (lower == t) return true;
  for (const char* f : {"n", "no", "false", "off"})
    if (lower == f) return false;
  return std::nullopt;
}

// An optionally signed decimal integer.
std::optional<int64_t> parse_int(const std::string& s) {
  const size_t digits = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (s.size() == digits || !std::all_of(s.begin() + static_cast<std::ptrdiff_t>(digits), s.end(),
                                         [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  int64_t v = 0;
  const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A decimal number with an optional exponent ("0.1", "1e-09", "-3", ".5"), or YAML's .inf, -.inf, .nan.
std::optional<double> parse_double(const std::string& s) {
  for (const char* inf : {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"})
    if (s == inf) return std::numeric_limits<double>::infinity();
  for (const char* inf : {"-.inf", "-.Inf", "-.INF"})
    if (s == inf) return -std::numeric_limits<double>::infinity();
  for (const char* nan : {".nan", ".NaN", ".NAN"})
    if (s == nan) return std::numeric_limits<double>::quiet_NaN();
  // from_chars alone would also take "inf" and "nan"; a YAML number has only these characters.
  if (s.empty() || s.find_first_not_of("0123456789+-.eE") != std::string::npos) return std::nullopt;
  const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
  double v = 0;
  const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::vector<std::string> read_marian_vocab(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TFM_CHECK(in.is_open(), "cannot open the Marian vocabulary '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  TFM_CHECK(!in.bad(), "cannot read the Marian vocabulary '", path, "'");
  return parse_marian_vocab(text.str(), path);
}

std::vector<std::string> parse_marian_vocab(std::string_view yaml, const std::string& where) {
  const YAML::Node root = load(yaml, where);
  TFM_CHECK(root.IsMap(), where, ": a Marian vocabulary is a YAML mapping of pieces to ids, this is ",
            root.IsNull() ? "empty" : cat("a ", kind_name(root)));
  const size_t n = root.size();
  TFM_CHECK(n > 0, where, ": the vocabulary is empty");
  std::vector<std::string> pieces(n);
  std::vector<int> lines(n, -1);  // where each id was given; -1 while not yet
  std::unordered_map<std::string, uint64_t> ids;
  for (const auto& entry : root) {
    const YAML::Node& key = entry.first;
    const YAML::Node& value = entry.second;
    const std::string line = at_line(key.Mark());
    TFM_CHECK(key.IsScalar() || key.IsNull(), where, line, ": a key is a ", kind_name(key), ", not a piece");
    // As Marian reads it: an unquoted null key is the piece "null".
    const std::string piece = key.as<std::string>();
    TFM_CHECK(value.IsScalar(), where, line, ": the id of piece '", printable(piece), "' is a ", kind_name(value),
              ", not an integer");
    TFM_CHECK(valid_utf8(piece), where, line, ": piece '", bytes_escaped(piece), "' (id ", printable(value.Scalar()),
              ") is not valid UTF-8");
    bool overflow = false;
    const std::optional<uint64_t> id = parse_index(value.Scalar(), overflow);
    TFM_CHECK(id || overflow, where, line, ": the id of piece '", printable(piece), "' is '", printable(value.Scalar()),
              "', not a non-negative integer");
    TFM_CHECK(id && *id < n, where, line, ": piece '", printable(piece), "' has id ", value.Scalar(), ", out of range: the ",
              n, " pieces must have the ids 0..", n - 1, " with no gap");
    const auto [seen, fresh] = ids.emplace(piece, *id);
    TFM_CHECK(fresh, where, line, ": piece '", printable(piece), "' appears twice, with ids ", seen->second, " and ", *id);
    const size_t i = static_cast<size_t>(*id);
    TFM_CHECK(lines[i]<0, where, line, ": id ", *id, " is given to piece '", printable(pieces[i]), "'", lines[i]> 0
                  ? cat(" (line ", lines[i], ")")
                  : std::string(),
              " and to piece '", printable(piece), "'");
    pieces[i] = piece;
    lines[i] = key.Mark().is_null() ? 0 : key.Mark().line + 1;
  }
  // n distinct ids below n: every id 0..n-1 is there.
  return pieces;
}

std::vector<std::string> MarianConfig::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : values_) out.push_back(k);
  return out;
}

const MarianConfig::Value& MarianConfig::value(const std::string& key) const {
  const auto it = values_.find(key);
  TFM_CHECK(it != values_.end(), where_, ": no '", key, "' in the model's configuration");
  return it->second;
}

bool MarianConfig::present(const std::string& key) const {
  const auto it = values_.find(key);
  return it != values_.end() && it->second.kind != Kind::Null;
}

namespace {
std::string line_of(const MarianConfig::Value& v) { return v.line > 0 ? cat(" (line ", v.line, ")") : std::string(); }

std::string describe(const MarianConfig::Value& v) {
  switch (v.kind) {
    case MarianConfig::Kind::Null: return "null (no value)";
    case MarianConfig::Kind::Scalar: return cat("'", printable(v.scalar), "'");
    case MarianConfig::Kind::Sequence: {
      std::string s = "the sequence [";
      for (size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + printable(v.items[i]);
      return s + "]";
    }
    case MarianConfig::Kind::Other: return "a mapping or a nested sequence";
  }
  return "?";
}
}  // namespace

const MarianConfig::Value& MarianConfig::scalar(const std::string& key, const char* type) const {
  const Value& v = value(key);
  TFM_CHECK(v.kind == Kind::Scalar, where_, line_of(v), ": '", key, "' is ", describe(v), ", not ", type);
  return v;
}

const MarianConfig::Value& MarianConfig::sequence(const std::string& key, const char* type) const {
  const Value& v = value(key);
  TFM_CHECK(v.kind == Kind::Sequence, where_, line_of(v), ": '", key, "' is ", describe(v), ", not ", type);
  return v;
}

std::string MarianConfig::get_string(const std::string& key) const { return scalar(key, "a string").scalar; }

int64_t MarianConfig::get_int(const std::string& key) const {
  const Value& v = scalar(key, "an integer");
  const std::optional<int64_t> i = parse_int(v.scalar);
  TFM_CHECK(i, where_, line_of(v), ": '", key, "' is '", printable(v.scalar), "', not an integer");
  return *i;
}

bool MarianConfig::get_bool(const std::string& key) const {
  const Value& v = scalar(key, "a boolean");
  const std::optional<bool> b = parse_bool(v.scalar);
  TFM_CHECK(b, where_, line_of(v), ": '", key, "' is '", printable(v.scalar), "', not a boolean (true or false)");
  return *b;
}

double MarianConfig::get_double(const std::string& key) const {
  const Value& v = scalar(key, "a number");
  const std::optional<double> d = parse_double(v.scalar);
  TFM_CHECK(d, where_, line_of(v), ": '", key, "' is '", printable(v.scalar), "', not a number");
  return *d;
}

std::vector<int64_t> MarianConfig::get_ints(const std::string& key) const {
  const Value& v = sequence(key, "a sequence of integers");
  std::vector<int64_t> out;
  for (const std::string& item : v.items) {
    const std::optional<int64_t> i = parse_int(item);
    TFM_CHECK(i, where_, line_of(v), ": '", key, "' is ", describe(v), ": item '", printable(item), "' is not an integer");
    out.push_back(*i);
  }
  return out;
}

std::vector<std::string> MarianConfig::get_strings(const std::string& key) const {
  return sequence(key, "a sequence of strings").items;
}

std::string MarianConfig::get_string(const std::string& key, const std::string& fallback) const {
  return present(key) ? get_string(key) : fallback;
}
int64_t MarianConfig::get_int(const std::string& key, int64_t fallback) const {
  return present(key) ? get_int(key) : fallback;
}
bool MarianConfig::get_bool(const std::string& key, bool fallback) const {
  return present(key) ? get_bool(key) : fallback;
}
double MarianConfig::get_double(const std::string& key, double fallback) const {
  return present(key) ? get_double(key) : fallback;
}

MarianConfig parse_marian_config(std::string_view yaml, const std::string& where) {
  yaml = yaml.substr(0, yaml.find('\0'));
  const YAML::Node root = load(yaml, where);
  TFM_CHECK(root.IsMap(), where, ": a Marian model configuration is a YAML mapping of options, this is ",
            root.IsNull() ? "empty" : cat("a ", kind_name(root)));
  std::map<std::string, MarianConfig::Value> values;
  for (const auto& entry : root) {
    const YAML::Node& key = entry.first;
    const YAML::Node& node = entry.second;
    const std::string line = at_line(key.Mark());
    TFM_CHECK(key.IsScalar(), where, line, ": a key is a ", kind_name(key), ", not an option's name");
    MarianConfig::Value v;
    v.line = key.Mark().is_null() ? 0 : key.Mark().line + 1;
    if (node.IsScalar()) {
      v.kind = MarianConfig::Kind::Scalar;
      v.scalar = node.Scalar();
    } else if (node.IsSequence()) {
      v.kind = MarianConfig::Kind::Sequence;
      for (const YAML::Node& item : node) {
        if (!item.IsScalar()) {
          v.kind = MarianConfig::Kind::Other;
          v.items.clear();
          break;
        }
        v.items.push_back(item.Scalar());
      }
    } else if (node.IsMap()) {
      v.kind = MarianConfig::Kind::Other;
    }
    const auto [it, fresh] = values.emplace(key.Scalar(), std::move(v));
    TFM_CHECK(fresh, where, line, ": option '", printable(key.Scalar()), "' is given twice (first on line ", it->second.line,
              ")");
  }
  return MarianConfig(std::move(values), where);
}

}  // namespace tfm
