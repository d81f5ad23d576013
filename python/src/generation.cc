// The result of generating with a decoder-only model: Generation (its hypotheses are Hypothesis).
#include "module.h"
#include "transformer/generator.h"

namespace transformer::python {

void bind_generation(py::module_& m) {
  py::class_<Generation>(m, "Generation", "A prompt's continuations, best first.")
      .def_property_readonly(
          "hypotheses",
          [](const py::object& self) {
            py::list out;
            for (const Hypothesis& h : self.cast<const Generation&>().hypotheses)
              out.append(py::cast(&h, py::return_value_policy::reference_internal, self));
            return out;
          },
          "the n-best list, best first: each hypothesis's ids (and text, but from generate_ids) are the "
          "continuation, with include_prompt the prompt first; no end of sequence")
      .def_property_readonly(
          "best",
          [](const py::object& self) {
            return py::cast(&self.cast<const Generation&>().best(), py::return_value_policy::reference_internal, self);
          },
          "the best hypothesis")
      .def_readonly("prompt_ids", &Generation::prompt_ids, "the prompt as fed: for text, BOS then its tokens")
      .def_readonly("repairs", &Generation::repairs, "what clean_input changed in the prompt (text only)")
      .def("__len__", [](const Generation& g) { return g.hypotheses.size(); })
      .def("__repr__", [](const Generation& g) {
        const std::string count = "hypotheses=" + std::to_string(g.hypotheses.size()) + ")";
        if (g.hypotheses.empty()) return "Generation(" + count;
        return "Generation(best=" + py::repr(text_of(g.hypotheses.front().text)).cast<std::string>() + ", " + count;
      });
}

}  // namespace transformer::python
