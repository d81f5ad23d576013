// translate's writing: translations, scores and n-best lists on standard output, the warnings of
// each line, and the --attention records.
#include "cli/translate_output.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/streams.h"
#include "core/error.h"
#include "transformer/text.h"

namespace tfm::cli {

namespace {

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ' ';
    out += std::to_string(ids[i]);
  }
  return out;
}

// Attention [layer][head][target][source] as nested JSON arrays.
nlohmann::json attention_json(const transformer::Attention& a) {
  nlohmann::json layers = nlohmann::json::array();
  for (int64_t l = 0; l < a.layers; ++l) {
    nlohmann::json heads = nlohmann::json::array();
    for (int64_t hd = 0; hd < a.heads; ++hd) {
      nlohmann::json rows = nlohmann::json::array();
      for (int64_t i = 0; i < a.target_length; ++i) {
        const float* row = &a.weights[static_cast<size_t>(((l * a.heads + hd) * a.target_length + i) * a.source_length)];
        rows.push_back(std::vector<float>(row, row + a.source_length));
      }
      heads.push_back(rows);
    }
    layers.push_back(heads);
  }
  return layers;
}

// One attention record of --attention: {"line", "source", "target", "attention"}.
nlohmann::json attention_record(const transformer::Translator& t, const transformer::Translation& r, int64_t line,
                                bool ids) {
  nlohmann::json j = {{"line", line}};
  auto token = [&](int32_t id) { return ids ? std::to_string(id) : t.piece(id); };
  std::vector<std::string> src, tgt;
  for (int32_t id : r.source_ids) src.push_back(token(id));
  src.push_back("</s>");
  if (!r.hypotheses.empty()) {
    const transformer::Hypothesis& h = r.hypotheses[0];
    for (int32_t id : h.ids) tgt.push_back(token(id));
    tgt.push_back("</s>");
    j["attention"] = attention_json(h.attention);
  }
  j["source"] = src;
  j["target"] = tgt;
  return j;
}

// The warnings of line `n` (`line` is its text): no tokens, or truncated.
void warn_line(const transformer::Translation& t, const std::string& line, int64_t n, const OutputFormat& format) {
  // A line that was not empty but has no tokens (the vocabulary's normalization removes
  // U+FFFD, control and zero-width characters) gets an empty translation, as an empty line
  // does, but not silently.
  if (t.source_ids.empty() && !format.ids && !transformer::clean_input(line).text.empty())
    std::fprintf(stderr, "warning: line %lld has no tokens (the vocabulary's normalization removes U+FFFD, "
                 "control and zero-width characters); its translation is empty\n", static_cast<long long>(n));
  if (t.truncated)
    std::fprintf(stderr, "warning: line %lld has more than %lld tokens; translated its first %lld\n",
                 static_cast<long long>(n), static_cast<long long>(format.max_input_tokens),
                 static_cast<long long>(format.max_input_tokens));
}

// Line `n`'s translation on standard output: its n-best list, or the best with its score.
void print_translation(const transformer::Translation& t, int64_t n, const OutputFormat& format) {
  auto text = [&](const transformer::Hypothesis& h) { return format.ids ? join_ids(h.ids) : h.text; };
  if (format.n_best > 1) {
    for (const transformer::Hypothesis& h : t.hypotheses)
      std::printf("%lld ||| %s ||| %.6f\n", static_cast<long long>(n - 1), text(h).c_str(), h.normalized);
    if (t.hypotheses.empty()) std::printf("%lld ||| ||| 0\n", static_cast<long long>(n - 1));
  } else {
    const std::string best = t.hypotheses.empty() ? "" : text(t.hypotheses[0]);
    if (format.scores) std::printf("%s\t%.6f\n", best.c_str(), t.hypotheses.empty() ? 0.0 : t.hypotheses[0].normalized);
    else std::printf("%s\n", best.c_str());
  }
}

}  // namespace

void warn_repairs(const std::vector<transformer::Translation>& out, int64_t first) {
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string where = cat("line ", first + static_cast<int64_t>(i));
    for (const std::string& w : transformer::repair_warnings(out[i].repairs, where))
      std::fprintf(stderr, "warning: %s\n", w.c_str());
    for (const std::string& w : transformer::repair_warnings(out[i].prefix_repairs, cat(where, " of --target-prefix")))
      std::fprintf(stderr, "warning: %s\n", w.c_str());
  }
}

void write_chunk(const transformer::Translator& t, const std::vector<transformer::Translation>& out,
                 const std::vector<std::string>& lines, int64_t first, const OutputFormat& format) {
  const std::string attention_file = cat("--attention '", format.attention_path, "'");
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t n = first + static_cast<int64_t>(i);
    warn_line(out[i], lines[i], n, format);
    print_translation(out[i], n, format);
    if (format.attention) {
      *format.attention << attention_record(t, out[i], n, format.ids).dump() << '\n';
      if (!format.attention->good()) check_stream(*format.attention, attention_file);
    }
  }
  check_stdout();  // a full disk stops the run here, not after translating everything
  if (format.attention) check_stream(*format.attention, attention_file);
}

void print_stats(int64_t sentences, int64_t tokens, double seconds) {
  std::fprintf(stderr, "translated %lld sentences, %lld tokens in %.3f s: %.0f tokens/s\n",
               static_cast<long long>(sentences), static_cast<long long>(tokens), seconds,
               static_cast<double>(tokens) / std::max(seconds, 1e-9));
}

}  // namespace tfm::cli
