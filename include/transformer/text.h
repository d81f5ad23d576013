#pragma once
// The one input-cleaning policy of translation, scoring and attention (docs/api.md): a line of
// text is made readable rather than refused, and every repair is reported.
//   1. NUL bytes become spaces (the tokenizer would stop at the first one);
//   2. surrounding whitespace (spaces, tabs, CR, LF, vertical tab, form feed) is trimmed;
//   3. byte sequences that are not well-formed UTF-8 become U+FFFD.
#include <string>
#include <string_view>
#include <vector>

namespace transformer {

// What clean_input changed in a line.
struct Repairs {
  bool nul_bytes = false;     // NUL bytes were replaced by spaces
  bool invalid_utf8 = false;  // ill-formed UTF-8 was replaced by U+FFFD
  bool any() const { return nul_bytes || invalid_utf8; }
};

struct CleanText {
  std::string text;
  Repairs repairs;
};

CleanText clean_input(std::string_view line);

// The warnings the command line prints for a line's repairs ("line N contains NUL bytes; …"), one
// per repair; `what` names the line ("line 3", "line 3, target side").
std::vector<std::string> repair_warnings(const Repairs& repairs, std::string_view what);

}  // namespace transformer
