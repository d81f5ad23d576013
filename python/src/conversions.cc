// The conversions every binding shares: paths from Python, text and floats to Python.
#include "module.h"

namespace transformer::python {

std::string fspath(const py::handle& path) {
  return py::bytes(py::module_::import("os").attr("fsencode")(path)).cast<std::string>();
}

std::optional<std::string> fspath_or_none(const py::handle& path) {
  if (path.is_none()) return std::nullopt;
  return fspath(path);
}

py::str text_of(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

std::string repr_float(double x) { return py::repr(py::float_(x)).cast<std::string>(); }

}  // namespace transformer::python
