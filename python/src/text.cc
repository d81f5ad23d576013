// Input text: clean_input, its result (CleanText) and what it repaired (Repairs).

#include "module.h"
#include "transformer/text.h"

namespace transformer::python {

namespace {
std::string repr_repairs(const Repairs& r) {
  return std::string("Repairs(nul_bytes=") + (r.nul_bytes ? "True" : "False") +
         ", invalid_utf8=" + (r.invalid_utf8 ? "True" : "False") + ")";
}
}  // namespace

void bind_text(py::module_& m) {
  py::class_<Repairs>(m, "Repairs", "What clean_input changed in a line.")
      .def_readonly("nul_bytes", &Repairs::nul_bytes, "NUL bytes were replaced by spaces")
      .def_readonly("invalid_utf8", &Repairs::invalid_utf8, "ill-formed UTF-8 was replaced by U+FFFD")
      .def("any", &Repairs::any, "whether anything was repaired")
      .def("__bool__", &Repairs::any)
      .def("__repr__", &repr_repairs);

  py::class_<CleanText>(m, "CleanText", "A line made readable, and what was repaired.")
      .def_property_readonly("text", [](const CleanText& c) { return text_of(c.text); })
      .def_readonly("repairs", &CleanText::repairs)
      .def("__repr__", [](const CleanText& c) {
        return "CleanText(text=" + py::repr(text_of(c.text)).cast<std::string>() + ", repairs=" +
               repr_repairs(c.repairs) + ")";
      });

  m.def(
      "clean_input", [](const std::string& line) { return clean_input(line); }, py::arg("line"),
      "The one input policy of translation and scoring: NUL bytes become spaces, surrounding whitespace is "
      "trimmed, bytes that are not UTF-8 become U+FFFD (give bytes to have them checked). Returns CleanText.");
  m.def("repair_warnings", &repair_warnings, py::arg("repairs"), py::arg("what"),
        "The warnings the command line prints for a line's repairs; `what` names the line (\"line 3\").");
}

}  // namespace transformer::python
