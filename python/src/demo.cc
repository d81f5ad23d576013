// write_demo_data: the demo task (English → German number words) written as parallel text.
#include "module.h"
#include "transformer/demo.h"

namespace transformer::python {

void bind_demo(py::module_& m) {
  m.def("write_demo_data", [](const py::object& dir, uint64_t seed, int64_t train, int64_t valid, int64_t test) {
          const std::string d = fspath(dir);
          DemoData data;
          {
            py::gil_scoped_release release;
            data = write_demo_data(d, seed, train, valid, test);
          }
          py::dict out;
          out["train"] = data.train;
          out["valid"] = data.valid;
          out["test"] = data.test;
          out["example"] = py::make_tuple(text_of(data.example_source), text_of(data.example_target));
          return out;
        }, py::arg("dir"), py::kw_only(), py::arg("seed") = 1, py::arg("train") = 20000, py::arg("valid") = 500,
        py::arg("test") = 1000,
        "Writes the demo task (English → German number words) as dir/{train,valid,test}.{en,de}; returns the "
        "pairs per split and the first training pair.");
}

}  // namespace transformer::python
