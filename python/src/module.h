#pragma once
// The Python module `transformer._transformer`, bound by concern (module.cc registers them in
// order): the functions that bind each concern, and the conversions they share.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every binding, so that each converts the standard containers alike

#include <memory>
#include <optional>
#include <string>

#include "transformer/translator.h"

namespace transformer::python {

namespace py = pybind11;

// str, bytes or os.PathLike → a path string: the file system's own bytes (os.fsencode), so that a
// bytes path stays itself (not "b'...'") and a str one undecodable bytes came from is given back.
std::string fspath(const py::handle& path);
std::optional<std::string> fspath_or_none(const py::handle& path);

// Text the library produced (a decoded hypothesis) as str; bytes that are not UTF-8, which a
// vocabulary's byte pieces could give, become U+FFFD rather than a UnicodeDecodeError.
py::str text_of(const std::string& s);

// A float as Python prints it (repr): the shortest digits that read back to it, nan, inf.
std::string repr_float(double x);

// The weights keyword of Translator, Generator and Encoder: "packed", "int8", "plain" or "bf16".
TranslatorOptions::Weights parse_weights(const std::string& name);
const char* weights_name(TranslatorOptions::Weights weights);

// The load keywords Translator, Generator and Encoder share, as their options (each class's options
// are TranslatorOptions); Translator adds its shortlist.
TranslatorOptions load_options(const py::object& vocab, bool need_vocab, bool verify, const std::string& weights,
                               int threads, const std::string& device);

// A Translator, Generator or Encoder loaded from `model_path` with the GIL released. What the
// command line prints as "warning: ..." (a model without a vocabulary fingerprint) is issued as a
// UserWarning; the informational notes stay in load_notes. Level 2: the caller of the package's
// __init__ (python/transformer/_arguments.py), the user's line.
template <class T>
std::unique_ptr<T> load_with_warnings(const py::object& model_path, const TranslatorOptions& options) {
  const std::string path = fspath(model_path);
  std::unique_ptr<T> loaded;
  {
    py::gil_scoped_release release;
    loaded = std::make_unique<T>(path, options);
  }
  for (const std::string& w : loaded->load_notes().warnings)
    if (PyErr_WarnEx(PyExc_UserWarning, w.c_str(), 2) < 0) throw py::error_already_set();
  return loaded;
}

// Each concern's classes and functions, in the order module.cc registers them (a signature names a
// class by its Python name only once the class is registered).
void bind_text(py::module_& m);          // Repairs, CleanText, clean_input, repair_warnings
void bind_results(py::module_& m);       // LoadNotes, Hypothesis, Translation, Score
void bind_translator(py::module_& m);    // Translator
void bind_model_files(py::module_& m);   // ModelInfo, model_info, average_checkpoints
void bind_metrics(py::module_& m);       // BleuScore, ChrfScore, ExactMatch, bleu, chrf, exact_match
void bind_train_results(py::module_& m); // Progress, MetricsRecord, ValidationResult, StepResult, TrainResult
void bind_trainer(py::module_& m);       // Trainer, plot_training
void bind_demo(py::module_& m);          // write_demo_data
void bind_encoder(py::module_& m);       // Encoder
// Generation with decoder-only models.
void bind_generation(py::module_& m);    // Generation
void bind_generator(py::module_& m);     // Generator

}  // namespace transformer::python
