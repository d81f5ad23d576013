#include "transformer/attention_svg.h"

#include "core/error.h"
#include "viz/heatmap.h"

namespace transformer {

using tfm::cat;

std::string attention_svg(const Translator& translator, const Translation& t, const Hypothesis& h,
                          const AttentionView& view) {
  const Attention& a = h.attention;  // [layers, heads, T, S]
  TFM_CHECK(!a.empty(), "the hypothesis has no attention: translate with record_attention");
  const int64_t L = a.layers, H = a.heads, T = a.target_length, S = a.source_length;
  const int64_t layer = view.layer < 0 ? L - 1 : view.layer;
  TFM_CHECK(layer >= 0 && layer < L, "layer ", view.layer, " is outside [0, ", L, ")");
  TFM_CHECK(view.head < H, "head ", view.head, " is outside [0, ", H, ")");
  std::vector<std::string> src, tgt;
  for (int32_t id : t.source_ids) src.push_back(translator.piece(id));
  src.push_back("</s>");
  for (int32_t id : h.ids) tgt.push_back(translator.piece(id));
  tgt.push_back("</s>");
  auto head_map = [&](int64_t hd) {
    tfm::Heatmap m{cat("layer ", layer, ", head ", hd), std::vector<std::vector<float>>(T, std::vector<float>(S))};
    for (int64_t i = 0; i < T; ++i)
      for (int64_t s = 0; s < S; ++s) m.weights[i][s] = a.at(layer, hd, i, s);
    return m;
  };
  std::vector<tfm::Heatmap> maps;
  if (view.grid) {
    for (int64_t hd = 0; hd < H; ++hd) maps.push_back(head_map(hd));
  } else if (view.head >= 0) {
    maps.push_back(head_map(view.head));
  } else {
    tfm::Heatmap avg{cat("layer ", layer, ", average of ", H, " heads"),
                     std::vector<std::vector<float>>(T, std::vector<float>(S))};
    for (int64_t hd = 0; hd < H; ++hd) {
      const tfm::Heatmap m = head_map(hd);
      for (int64_t i = 0; i < T; ++i)
        for (int64_t s = 0; s < S; ++s) avg.weights[i][s] += m.weights[i][s] / static_cast<float>(H);
    }
    maps.push_back(avg);
  }
  return tfm::heatmaps_svg(maps, src, tgt, 4);
}

}  // namespace transformer
