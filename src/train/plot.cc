#include "train/plot.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/json_text.h"
#include "io/atomic_file.h"

namespace tfm {

namespace {
struct Series {
  std::string name, colour;
  std::vector<std::pair<double, double>> points;  // (step, value)
};

std::string number(double x) {
  std::ostringstream s;
  s.precision(4);
  s << x;
  return s.str();
}

// A chart with axes, ticks and a legend in the box [x0, x0 + w] × [y0, y0 + h].
void chart(std::ostringstream& svg, double x0, double y0, double w, double h, const std::string& title,
           const std::vector<Series>& series, double max_step) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points) lo = std::min(lo, y), hi = std::max(hi, y);
  svg << "<text x='" << x0 + w / 2 << "' y='" << y0 - 8 << "' text-anchor='middle' font-size='14'>" << title
      << "</text>\n";
  svg << "<rect x='" << x0 << "' y='" << y0 << "' width='" << w << "' height='" << h
      << "' fill='none' stroke='#888'/>\n";
  if (!std::isfinite(lo)) {
    svg << "<text x='" << x0 + w / 2 << "' y='" << y0 + h / 2 << "' text-anchor='middle' fill='#888'>no data</text>\n";
    return;
  }
  // Values that are never negative (losses, BLEU, rates) get no negative ticks, flat ones included.
  const bool never_negative = lo >= 0;
  // In halves: hi − lo overflows for values near ±1e308 (a diverged run's losses), halves do not.
  if (hi / 2 - lo / 2 < 1e-9) hi = lo + 1, lo -= 1;
  const double pad = 0.1 * (hi / 2 - lo / 2);
  lo -= pad, hi += pad;
  if (never_negative) lo = std::max(lo, 0.0);
  const double half_span = hi / 2 - lo / 2;
  max_step = std::max(max_step, 1.0);
  auto px = [&](double x) { return x0 + w * x / max_step; };
  auto py = [&](double y) { return y0 + h * (1 - (y / 2 - lo / 2) / half_span); };
  for (int i = 0; i <= 4; ++i) {
    const double yv = 2 * (lo / 2 + half_span / 4 * i), xv = max_step * i / 4;
    svg << "<line x1='" << x0 << "' x2='" << x0 + w << "' y1='" << py(yv) << "' y2='" << py(yv)
        << "' stroke='#eee'/>\n";
    svg << "<text x='" << x0 - 6 << "' y='" << py(yv) + 4 << "' text-anchor='end' font-size='11'>" << number(yv)
        << "</text>\n";
    svg << "<text x='" << px(xv) << "' y='" << y0 + h + 16 << "' text-anchor='middle' font-size='11'>"
        << static_cast<long long>(xv) << "</text>\n";
  }
  svg << "<text x='" << x0 + w / 2 << "' y='" << y0 + h + 32 << "' text-anchor='middle' font-size='12'>step</text>\n";
  double legend_y = y0 + 14;
  for (const auto& s : series) {
    if (s.points.empty()) continue;
    svg << "<polyline fill='none' stroke='" << s.colour << "' stroke-width='1.5' points='";
    for (const auto& [x, y] : s.points) svg << px(x) << ',' << py(y) << ' ';
    svg << "'/>\n";
    if (s.points.size() < 30)
      for (const auto& [x, y] : s.points)
        svg << "<circle cx='" << px(x) << "' cy='" << py(y) << "' r='2.5' fill='" << s.colour << "'/>\n";
    svg << "<text x='" << x0 + w - 8 << "' y='" << legend_y << "' text-anchor='end' font-size='12' fill='" << s.colour
        << "'>" << s.name << "</text>\n";
    legend_y += 16;
  }
}
}  // namespace

bool write_training_plot(const MetricsLog& metrics, const std::string& svg_path) {
  const std::vector<MetricsLog::Record> records = metrics.read();
  if (records.empty()) return false;
  Series train{"training loss (label-smoothed)", "#1f77b4", {}}, valid{"validation loss", "#d62728", {}},
      bleu{"validation BLEU", "#2ca02c", {}}, exact{"validation exact match (%)", "#9467bd", {}};
  double max_step = 0;
  for (const auto& r : records) {
    // A field the plot reads must be a finite number: anything else names the file and line.
    auto number_at = [&](const char* key) {
      const nlohmann::json& v = r.fields[key];
      TFM_CHECK(v.is_number() && std::isfinite(v.get<double>()), metrics.path(), " line ", r.line, ": '", key,
                "' is ", json_quote(v), ", not a finite number");
      return v.get<double>();
    };
    const double step = r.fields.contains("step") ? number_at("step") : 0.0;
    max_step = std::max(max_step, step);
    if (r.fields.contains("loss")) train.points.emplace_back(step, number_at("loss"));
    if (r.fields.contains("valid_loss")) valid.points.emplace_back(step, number_at("valid_loss"));
    if (r.fields.contains("valid_bleu")) bleu.points.emplace_back(step, number_at("valid_bleu"));
    if (r.fields.contains("valid_exact")) exact.points.emplace_back(step, 100 * number_at("valid_exact"));
  }
  if (train.points.empty() && valid.points.empty() && bleu.points.empty() && exact.points.empty()) return false;
  std::ostringstream svg;
  const double width = 900, height = 380;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  chart(svg, 60, 40, 360, 280, "loss per target token", {train, valid}, max_step);
  chart(svg, 520, 40, 360, 280, "validation BLEU and exact match", {bleu, exact}, max_step);
  svg << "</svg>\n";
  write_file_atomic(svg_path, [&](std::ostream& out) { out << svg.str(); });
  return true;
}

}  // namespace tfm
