#pragma once
// Attention heatmaps as SVG: source tokens across, target tokens down, darker = more weight.
#include <string>
#include <vector>

namespace tfm {

struct Heatmap {
  std::string title;
  std::vector<std::vector<float>> weights;  // [target][source]
};

// Lays out one or more heatmaps side by side (a grid of `columns`) with the token labels.
std::string heatmaps_svg(const std::vector<Heatmap>& maps, const std::vector<std::string>& source,
                         const std::vector<std::string>& target, int columns);

}  // namespace tfm
