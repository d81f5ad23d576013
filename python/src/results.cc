// The results of loading and translating: LoadNotes, Hypothesis (its attention a NumPy view),
// Translation and Score.
#include <pybind11/numpy.h>

#include "module.h"
#include "transformer/translation.h"
#include "transformer/translator.h"

namespace transformer::python {

namespace {
// A read-only NumPy view of a hypothesis's attention, kept alive by the hypothesis's Python object.
py::object attention_array(const py::object& self) {
  const Attention& a = self.cast<const Hypothesis&>().attention;
  if (a.empty()) return py::none();
  py::array_t<float> array({a.layers, a.heads, a.target_length, a.source_length}, a.weights.data(), self);
  array.attr("setflags")(py::arg("write") = false);
  return array;
}

void bind_load_notes(py::module_& m) {
  py::class_<LoadNotes>(m, "LoadNotes", "What the loader wants a user to see.")
      .def_readonly("notes", &LoadNotes::notes, "informational notes")
      .def_readonly("warnings", &LoadNotes::warnings, "something may be wrong")
      .def("__repr__", [](const LoadNotes& n) {
        return "LoadNotes(notes=" + py::repr(py::cast(n.notes)).cast<std::string>() +
               ", warnings=" + py::repr(py::cast(n.warnings)).cast<std::string>() + ")";
      });
}

void bind_hypothesis(py::module_& m) {
  py::class_<Hypothesis>(m, "Hypothesis", "One translation of a sentence.")
      .def_property_readonly("text", [](const Hypothesis& h) { return text_of(h.text); },
                             "the detokenized text (\"\" from translate_ids)")
      .def_readonly("ids", &Hypothesis::ids, "the output tokens, without beginning and end of sentence")
      .def_readonly("score", &Hypothesis::score, "sum of the log-probabilities of the tokens and the end of sentence")
      .def_readonly("normalized", &Hypothesis::normalized, "score / lp(len(ids) + 1): what beam search ranks by")
      .def_property_readonly("attention", &attention_array,
                             "the encoder-decoder attention (translate(..., attention=True)): a read-only float32 "
                             "array [layers, heads, target, source], end of sentence included on both sides; else None")
      .def("__repr__", [](const Hypothesis& h) {
        return "Hypothesis(text=" + py::repr(text_of(h.text)).cast<std::string>() + ", score=" +
               repr_float(h.score) + ")";
      });
}

void bind_translation(py::module_& m) {
  py::class_<Translation>(m, "Translation", "A sentence's translations, best first.")
      .def_property_readonly(
          "hypotheses",
          [](const py::object& self) {
            py::list out;
            for (const Hypothesis& h : self.cast<const Translation&>().hypotheses)
              out.append(py::cast(&h, py::return_value_policy::reference_internal, self));
            return out;
          },
          "the n-best list, best first; empty for an empty input")
      .def_property_readonly(
          "best",
          [](const py::object& self) {
            return py::cast(&self.cast<const Translation&>().best(), py::return_value_policy::reference_internal, self);
          },
          "the best hypothesis; raises Error for an empty input, which has none (its repr shows no best)")
      .def_readonly("source_ids", &Translation::source_ids,
                    "the encoded (maybe truncated) source, without end of sentence")
      .def_readonly("truncated", &Translation::truncated, "the source had more than max_input_tokens tokens")
      .def_readonly("repairs", &Translation::repairs, "what clean_input changed in the input line")
      .def_readonly("target_prefix_ids", &Translation::target_prefix_ids,
                    "the forced target prefix, encoded: every hypothesis's ids start with it")
      .def_readonly("prefix_repairs", &Translation::prefix_repairs, "what clean_input changed in the target prefix")
      .def("__len__", [](const Translation& t) { return t.hypotheses.size(); })
      // An empty input's repr names no best, as .best has none to give (it raises).
      .def("__repr__", [](const Translation& t) {
        const std::string count = "hypotheses=" + std::to_string(t.hypotheses.size()) + ")";
        if (t.hypotheses.empty()) return "Translation(" + count;
        return "Translation(best=" + py::repr(text_of(t.hypotheses.front().text)).cast<std::string>() + ", " + count;
      });
}

void bind_score(py::module_& m) {
  py::class_<Score>(m, "Score", "log p(target | source) by teacher forcing.")
      .def_readonly("total", &Score::total, "sum of the log-probabilities of the target's tokens and end of sentence")
      .def_readonly("per_token", &Score::per_token, "total / tokens")
      .def_readonly("tokens", &Score::tokens, "the target's tokens, end of sentence included")
      .def_readonly("truncated", &Score::truncated, "a side had more than max_input_tokens tokens")
      .def_readonly("source_repairs", &Score::source_repairs)
      .def_readonly("target_repairs", &Score::target_repairs)
      .def("__repr__", [](const Score& s) {
        return "Score(total=" + repr_float(s.total) + ", tokens=" + std::to_string(s.tokens) + ")";
      });
}
}  // namespace

void bind_results(py::module_& m) {
  bind_load_notes(m);
  bind_hypothesis(m);
  bind_translation(m);
  bind_score(m);
}

}  // namespace transformer::python
