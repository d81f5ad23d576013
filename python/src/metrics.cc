// The metrics, as sacreBLEU 2.x computes them: bleu, chrf, exact_match (their keywords BleuOptions'
// and ChrfOptions', defaults included) and their scores.
#include <cstdint>
#include <vector>

#include "module.h"
#include "transformer/metrics.h"

namespace transformer::python {

namespace {
using Streams = std::vector<std::vector<std::string>>;

void bind_bleu(py::module_& m) {
  const BleuOptions defaults;
  m.def(
      "bleu",
      [](const std::vector<std::string>& hyps, const Streams& refs, bool lowercase, const std::string& tokenize) {
        BleuOptions o;
        o.lowercase = lowercase;
        o.tokenize = parse_bleu_tokenize(tokenize);
        py::gil_scoped_release release;
        return corpus_bleu(hyps, refs, o);
      },
      py::arg("hyps"), py::arg("refs"), py::kw_only(), py::arg("lowercase") = defaults.lowercase,
      py::arg("tokenize") = bleu_tokenize_name(defaults.tokenize),
      "Corpus BLEU, exactly as sacreBLEU 2.x with its defaults. refs is a list of reference streams: refs[k][i] "
      "is the k-th reference of hyps[i] (one reference each: [refs]).");
}

void bind_chrf(py::module_& m) {
  const ChrfOptions defaults;
  m.def(
      "chrf",
      [](const std::vector<std::string>& hyps, const Streams& refs, bool lowercase, int char_order, int word_order,
         int beta, bool whitespace, bool eps_smoothing) {
        ChrfOptions o;
        o.lowercase = lowercase;
        o.char_order = char_order;
        o.word_order = word_order;
        o.beta = beta;
        o.whitespace = whitespace;
        o.eps_smoothing = eps_smoothing;
        py::gil_scoped_release release;
        return corpus_chrf(hyps, refs, o);
      },
      py::arg("hyps"), py::arg("refs"), py::kw_only(), py::arg("lowercase") = defaults.lowercase,
      py::arg("char_order") = defaults.char_order, py::arg("word_order") = defaults.word_order,
      py::arg("beta") = defaults.beta, py::arg("whitespace") = defaults.whitespace,
      py::arg("eps_smoothing") = defaults.eps_smoothing,
      "Corpus chrF (word_order=2: chrF++), exactly as sacreBLEU 2.x. refs as for bleu.");
}

void bind_exact_match(py::module_& m) {
  m.def(
      "exact_match",
      [](const std::vector<std::string>& hyps, const Streams& refs, bool lowercase) {
        py::gil_scoped_release release;
        return exact_match(hyps, refs, lowercase);
      },
      py::arg("hyps"), py::arg("refs"), py::kw_only(), py::arg("lowercase") = false,
      "The share of hypotheses identical to one of their references (after Unicode lowercasing when lowercase). "
      "refs as for bleu.");
}

void bind_score_classes(py::module_& m) {
  py::class_<BleuScore>(m, "BleuScore", "Corpus BLEU as sacreBLEU 2.x computes it.")
      .def_readonly("score", &BleuScore::score, "0..100")
      .def_property_readonly("precisions",
                             [](const BleuScore& b) { return std::vector<double>(b.precisions, b.precisions + 4); },
                             "n-gram precisions, n = 1..4 (0..100, smoothed)")
      .def_readonly("bp", &BleuScore::bp, "brevity penalty")
      .def_readonly("ratio", &BleuScore::ratio, "hyp_len / ref_len")
      .def_property_readonly("hyp_len", [](const BleuScore& b) { return b.stats.hyp_len; })
      .def_property_readonly("ref_len", [](const BleuScore& b) { return b.stats.ref_len; })
      .def_property_readonly(
          "counts", [](const BleuScore& b) { return std::vector<int64_t>(b.stats.correct, b.stats.correct + 4); },
          "clipped n-gram matches, n = 1..4")
      .def_property_readonly(
          "totals", [](const BleuScore& b) { return std::vector<int64_t>(b.stats.total, b.stats.total + 4); },
          "hypothesis n-grams, n = 1..4")
      .def("format", &BleuScore::format, "sacreBLEU's line: \"BLEU = 35.12 65.3/42.1/29.8/21.0 (BP = ...)\"")
      .def("__str__", &BleuScore::format)
      .def("__float__", [](const BleuScore& b) { return b.score; })
      .def("__repr__", [](const BleuScore& b) { return "<" + b.format() + ">"; });

  py::class_<ChrfScore>(m, "ChrfScore", "Corpus chrF as sacreBLEU 2.x computes it.")
      .def_readonly("score", &ChrfScore::score, "0..100")
      .def_readonly("name", &ChrfScore::name, "\"chrF2\", \"chrF2++\"")
      .def("format", &ChrfScore::format, "sacreBLEU's line: \"chrF2 = 57.31\"")
      .def("__str__", &ChrfScore::format)
      .def("__float__", [](const ChrfScore& c) { return c.score; })
      .def("__repr__", [](const ChrfScore& c) { return "<" + c.format() + ">"; });

  py::class_<ExactMatch>(m, "ExactMatch", "The share of segments equal to one of their references.")
      .def_readonly("matches", &ExactMatch::matches)
      .def_readonly("segments", &ExactMatch::segments)
      .def_readonly("score", &ExactMatch::score, "100 · matches / segments")
      .def("__float__", [](const ExactMatch& e) { return e.score; })
      .def("__repr__", [](const ExactMatch& e) {
        return "ExactMatch(matches=" + std::to_string(e.matches) + ", segments=" + std::to_string(e.segments) + ")";
      });
}
}  // namespace

void bind_metrics(py::module_& m) {
  bind_score_classes(m);
  bind_bleu(m);
  bind_chrf(m);
  bind_exact_match(m);
}

}  // namespace transformer::python
