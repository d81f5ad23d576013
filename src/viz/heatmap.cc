#include "viz/heatmap.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace tfm {

namespace {
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}
}  // namespace

std::string heatmaps_svg(const std::vector<Heatmap>& maps, const std::vector<std::string>& source,
                         const std::vector<std::string>& target, int columns) {
  const double cell = 22, label = 8.0 * static_cast<double>(std::max<size_t>(
                                                6, std::max_element(target.begin(), target.end(),
                                                                    [](auto& a, auto& b) { return a.size() < b.size(); })
                                                       ->size()));
  size_t longest_src = 6;
  for (const auto& s : source) longest_src = std::max(longest_src, s.size());
  const double top = 8.0 * static_cast<double>(longest_src) + 30, gap = 30;
  const double map_w = label + cell * static_cast<double>(source.size()), map_h = top + cell * static_cast<double>(target.size());
  const int cols = std::max(1, std::min<int>(columns, static_cast<int>(maps.size())));
  const int rows = (static_cast<int>(maps.size()) + cols - 1) / cols;
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << cols * (map_w + gap) << "' height='"
      << rows * (map_h + gap) << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  for (size_t m = 0; m < maps.size(); ++m) {
    const double x0 = static_cast<double>(m % cols) * (map_w + gap), y0 = static_cast<double>(m / cols) * (map_h + gap);
    svg << "<text x='" << x0 + label << "' y='" << y0 + 14 << "' font-weight='bold'>" << escape(maps[m].title)
        << "</text>\n";
    for (size_t s = 0; s < source.size(); ++s) {  // source labels, rotated, across the top
      const double x = x0 + label + cell * (static_cast<double>(s) + 0.5), y = y0 + top - 4;
      svg << "<text transform='translate(" << x << ',' << y << ") rotate(-60)'>" << escape(source[s]) << "</text>\n";
    }
    for (size_t t = 0; t < target.size(); ++t) {
      const double y = y0 + top + cell * static_cast<double>(t);
      svg << "<text x='" << x0 + label - 4 << "' y='" << y + cell * 0.7 << "' text-anchor='end'>" << escape(target[t])
          << "</text>\n";
      for (size_t s = 0; s < source.size(); ++s) {
        const float w = t < maps[m].weights.size() && s < maps[m].weights[t].size() ? maps[m].weights[t][s] : 0.f;
        // NaN (a model gone wrong) would make the cast undefined: drawn as white, like 0.
        const int shade = std::isnan(w) ? 255 : static_cast<int>(255 * (1 - std::clamp(w, 0.f, 1.f)));
        svg << "<rect x='" << x0 + label + cell * static_cast<double>(s) << "' y='" << y << "' width='" << cell
            << "' height='" << cell << "' fill='rgb(" << shade << ',' << shade << ",255)' stroke='#ddd'><title>"
            << escape(target[t]) << " → " << escape(source[s]) << ": " << w << "</title></rect>\n";
      }
    }
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace tfm
