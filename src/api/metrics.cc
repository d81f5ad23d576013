#include "transformer/metrics.h"

#include "core/error.h"
#include "eval/text.h"

namespace transformer {

ExactMatch exact_match(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                       bool lowercase) {
  for (size_t k = 0; k < refs.size(); ++k)
    TFM_CHECK(refs[k].size() == hyps.size(), "there are ", hyps.size(), " hypotheses but reference stream ", k + 1,
              " has ", refs[k].size(), " segments");
  ExactMatch m;
  m.segments = static_cast<int64_t>(hyps.size());
  for (size_t i = 0; i < hyps.size(); ++i)
    for (const auto& stream : refs)
      if (lowercase ? tfm::unicode_lower(tfm::decode_utf8(hyps[i], "hypothesis")) ==
                          tfm::unicode_lower(tfm::decode_utf8(stream[i], "reference"))
                    : hyps[i] == stream[i]) {
        ++m.matches;
        break;
      }
  m.score = hyps.empty() ? 0.0 : 100.0 * static_cast<double>(m.matches) / static_cast<double>(hyps.size());
  return m;
}

}  // namespace transformer
