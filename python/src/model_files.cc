// Model files: ModelInfo (model_info's description of a file) and average_checkpoints.
#include <vector>

#include "module.h"
#include "transformer/import.h"
#include "transformer/model.h"
#include "transformer/translator.h"

namespace transformer::python {

namespace {
void bind_model_info_class(py::module_& m) {
  py::class_<ModelInfo>(m, "ModelInfo", "What a model or checkpoint file holds.")
      .def_readonly("path", &ModelInfo::path)
      .def_readonly("file_bytes", &ModelInfo::file_bytes)
      .def_readonly("vocab_fingerprint", &ModelInfo::vocab_fingerprint, "\"\" if the file records none")
      .def_readonly("checksum", &ModelInfo::checksum, "\"\" if the file records none (format version 1)")
      .def_readonly("checksum_verified", &ModelInfo::checksum_verified)
      .def_property_readonly(
          "config",
          [](const ModelInfo& info) {
            const py::object loads = py::module_::import("json").attr("loads");
            py::dict out;
            for (const auto& [field, json] : info.config) out[py::str(field)] = loads(json);
            return out;
          },
          "the configuration, field by field in the documented order (d_model → 512)")
      .def_readonly("head_dim", &ModelInfo::head_dim)
      .def_readonly("tied_embeddings", &ModelInfo::tied_embeddings)
      .def_readonly("tied_output", &ModelInfo::tied_output, "the output projection is the target embedding")
      .def_readonly("encoder_layers", &ModelInfo::encoder_layers)
      .def_readonly("decoder_layers", &ModelInfo::decoder_layers)
      .def_readonly("embedding_parameters", &ModelInfo::embedding_parameters)
      .def_readonly("encoder_parameters", &ModelInfo::encoder_parameters)
      .def_readonly("decoder_parameters", &ModelInfo::decoder_parameters)
      .def_readonly("total_parameters", &ModelInfo::total_parameters)
      .def_readonly("metadata", &ModelInfo::metadata, "the file's other metadata (e.g. averaged_from)")
      .def_readonly("notes", &ModelInfo::notes)
      .def("__repr__", [](const ModelInfo& i) {
        return "ModelInfo(path=" + py::repr(py::str(i.path)).cast<std::string>() +
               ", total_parameters=" + std::to_string(i.total_parameters) + ")";
      });
}
}  // namespace

void bind_model_files(py::module_& m) {
  bind_model_info_class(m);
  m.def(
      "model_info",
      [](const py::object& path, bool verify) {
        const std::string p = fspath(path);
        py::gil_scoped_release release;
        return model_info(p, verify);
      },
      py::arg("path"), py::kw_only(), py::arg("verify") = true,
      "Reads and validates a model or checkpoint file (every check of loading) and describes it.");
  m.def(
      "average_checkpoints",
      [](const std::vector<py::object>& inputs, const py::object& output, bool verify) {
        std::vector<std::string> in;
        for (const py::object& i : inputs) in.push_back(fspath(i));
        const std::string out = fspath(output);
        py::gil_scoped_release release;
        return average_checkpoints(in, out, verify);
      },
      py::arg("inputs"), py::arg("output"), py::kw_only(), py::arg("verify") = true,
      "The element-wise mean of the parameters of several model or checkpoint files of one configuration, "
      "written atomically to `output`. Returns the loader's LoadNotes.");
  m.def(
      "import_hf",
      [](const py::object& folder, const py::object& output) {
        const std::string in = fspath(folder), out = fspath(output);
        ImportResult r;
        {
          py::gil_scoped_release release;
          r = import_huggingface(in, out);
        }
        const py::object warn = py::module_::import("warnings").attr("warn");
        for (const std::string& note : r.notes) warn(note, py::module_::import("builtins").attr("UserWarning"), 2);
        return r.model_path;
      },
      py::arg("folder"), py::arg("output"),
      "Imports a folder written by Hugging Face transformers' save_pretrained (MarianMT, M2M-100/NLLB-200, "
      "GPT-2, Llama, Qwen2, Mistral, BERT; a sentence-transformers folder) into `output`: model.safetensors and "
      "its vocabulary, as `transformer import hf`. Returns the model file's path; the import's notes are "
      "UserWarnings. Raises transformer.Error naming what cannot be imported.");
}

}  // namespace transformer::python
