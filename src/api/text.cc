// The input-cleaning policy of include/transformer/text.h.
#include <algorithm>

#include "core/error.h"
#include "data/text.h"
#include "transformer/text.h"

namespace transformer {

CleanText clean_input(std::string_view line) {
  CleanText out;
  std::string raw(line);
  if (raw.find('\0') != std::string::npos) {
    out.repairs.nul_bytes = true;
    std::replace(raw.begin(), raw.end(), '\0', ' ');
  }
  out.text = std::string(tfm::trim(raw));
  if (!tfm::valid_utf8(out.text)) {
    out.repairs.invalid_utf8 = true;
    out.text = tfm::repair_utf8(out.text);
  }
  return out;
}

std::vector<std::string> repair_warnings(const Repairs& repairs, std::string_view what) {
  std::vector<std::string> out;
  if (repairs.nul_bytes) out.push_back(tfm::cat(what, " contains NUL bytes; replaced by spaces"));
  if (repairs.invalid_utf8) out.push_back(tfm::cat(what, " is not valid UTF-8; invalid bytes replaced by U+FFFD"));
  return out;
}

}  // namespace transformer
