#pragma once
// The YAML files of Marian (OPUS-MT) models, read with yaml-cpp, the library Marian writes them with
// (and reads them back with), so that every piece it wrote comes back exactly: a piece such as
// "yes", "null", "~", ":" or "\x1f" is written quoted or escaped by yaml-cpp's emitter, and
// read back the same. (CTranslate2's converter parses vocabularies by hand because PyYAML, which
// follows other rules, skips some of their entries.)
//
//   - A vocabulary, vocab.yml: a mapping piece → id, `"</s>": 0`, `"<unk>": 1`, `▁the: 5`, ...
//   - The model's configuration: the YAML text of the .npz array "special:model.yml" (io/npz.h), a
//     mapping of Marian's options, `type: transformer`, `dim-vocabs: [58101, 58101]`, ...
// Errors throw tfm::Error naming the file, the key or piece, the value, and the line where yaml-cpp
// gives one.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tfm {

// A Marian vocabulary's pieces, ordered by id: the ids must be non-negative decimal integers, each
// used once and together 0..n-1 with no gap, and the pieces unique. A key is read as Marian reads
// it (yaml-cpp's as<std::string>): an unquoted `null` or `~` key is the piece "null", as in Marian.
std::vector<std::string> read_marian_vocab(const std::string& path);
// The same from the file's text; `where` names it in errors.
std::vector<std::string> parse_marian_vocab(std::string_view yaml, const std::string& where);

// Marian's model configuration: a YAML mapping whose values are scalars, sequences of scalars or
// null (`key:` with nothing after it). Scalars keep their text and are converted when asked for,
// as yaml-cpp converts them for Marian; a wrong type or a missing key throws naming the key, its
// value, its line and `where`.
class MarianConfig {
 public:
  // Other: a mapping, or a sequence holding more than scalars (no accessor reads it).
  enum class Kind { Null, Scalar, Sequence, Other };
  struct Value {
    Kind kind = Kind::Null;
    std::string scalar;              // Kind::Scalar
    std::vector<std::string> items;  // Kind::Sequence: its items, each a scalar
    int line = 0;                    // 1-based, 0 if unknown
  };

  MarianConfig() = default;
  MarianConfig(std::map<std::string, Value> values, std::string where)
      : values_(std::move(values)), where_(std::move(where)) {}

  const std::string& where() const { return where_; }
  bool has(const std::string& key) const { return values_.count(key) > 0; }
  std::vector<std::string> keys() const;  // sorted
  // The key's value as it was parsed; throws naming the key if it is absent.
  const Value& value(const std::string& key) const;

  // Required: throw when the key is missing, null, or not of the type.
  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;                       // a decimal integer, optionally signed
  bool get_bool(const std::string& key) const;                         // true/false, yes/no, on/off, y/n (as yaml-cpp)
  double get_double(const std::string& key) const;                     // a decimal or exponent number, .inf, .nan
  std::vector<int64_t> get_ints(const std::string& key) const;         // a sequence of integers
  std::vector<std::string> get_strings(const std::string& key) const;  // a sequence of scalars

  // Optional: the fallback when the key is missing or null; otherwise as above (a value of the
  // wrong type still throws).
  std::string get_string(const std::string& key, const std::string& fallback) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  double get_double(const std::string& key, double fallback) const;

 private:
  const Value& scalar(const std::string& key, const char* type) const;
  const Value& sequence(const std::string& key, const char* type) const;
  bool present(const std::string& key) const;  // there and not null

  std::map<std::string, Value> values_;
  std::string where_;
};

// Parses the configuration's text; it ends at the first NUL (Marian stores it NUL-terminated),
// and must be a mapping with unique keys. `where` names it in errors, e.g. "model.npz:
// special:model.yml".
MarianConfig parse_marian_config(std::string_view yaml, const std::string& where);

}  // namespace tfm
