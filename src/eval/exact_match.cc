// Exact match: the share of hypotheses identical to one of their references.
#include "eval/exact_match.h"

#include "core/error.h"
#include "eval/text.h"

namespace transformer {

namespace {
// A segment without the carriage return a CRLF file leaves at its end (BLEU and chrF drop it as
// whitespace; a CRLF hypothesis file once matched none of its LF references exactly).
std::string_view without_cr(const std::string& s) {
  return !s.empty() && s.back() == '\r' ? std::string_view(s).substr(0, s.size() - 1) : std::string_view(s);
}
}  // namespace

ExactMatch exact_match(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                       bool lowercase) {
  for (size_t k = 0; k < refs.size(); ++k)
    TFM_CHECK(refs[k].size() == hyps.size(), "there are ", hyps.size(), " hypotheses but reference stream ", k + 1,
              " has ", refs[k].size(), " segments");
  ExactMatch m;
  m.segments = static_cast<int64_t>(hyps.size());
  for (size_t i = 0; i < hyps.size(); ++i)
    for (const auto& stream : refs)
      if (lowercase ? tfm::unicode_lower(tfm::decode_utf8(without_cr(hyps[i]), "hypothesis")) ==
                          tfm::unicode_lower(tfm::decode_utf8(without_cr(stream[i]), "reference"))
                    : without_cr(hyps[i]) == without_cr(stream[i])) {
        ++m.matches;
        break;
      }
  m.score = hyps.empty() ? 0.0 : 100.0 * static_cast<double>(m.matches) / static_cast<double>(hyps.size());
  return m;
}

}  // namespace transformer
