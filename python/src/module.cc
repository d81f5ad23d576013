// The Python module `transformer._transformer` (docs/python.md): the public C++ API
// (include/transformer) through pybind11. The package `transformer` (python/transformer) re-exports it.
//
// - Every call that computes (loading a model, translating, scoring, averaging, metrics) releases the
//   GIL while the C++ code runs: other Python threads go on, and several threads may translate with
//   one Translator at once (its calls do not modify it). Arguments are converted before the GIL is
//   released and results after it is taken back.
// - transformer::Error becomes transformer.Error (a RuntimeError) with the same message.
// - Results are the C++ structs as read-only Python objects; a hypothesis's attention is a read-only
//   NumPy float32 array [layers, heads, target, source] over the result's own memory (no copy).
#include <exception>

#include "module.h"
#include "transformer/error.h"
#include "transformer/search_options.h"

namespace py = pybind11;
using namespace transformer;

PYBIND11_MODULE(_transformer, m) {
  m.doc() = "The Transformer of \"Attention Is All You Need\": translation, scoring and metrics (C++ core).";
#ifdef TFM_VERSION
  m.attr("__version__") = TFM_VERSION;
#endif
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  // Registered after Error, so tried first: an allocation that failed is Python's MemoryError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });
  m.attr("MAX_BEAM_SIZE") = kMaxBeamSize;
  m.attr("MAX_BATCH_SENTENCES") = kMaxBatchSentences;
  m.attr("MAX_INPUT_TOKENS") = kMaxInputTokens;

  python::bind_text(m);
  python::bind_results(m);
  python::bind_translator(m);
  python::bind_model_files(m);
  python::bind_metrics(m);
  python::bind_train_results(m);
  python::bind_trainer(m);
  python::bind_demo(m);
  python::bind_encoder(m);
  // Generation with decoder-only models.
  python::bind_generation(m);
  python::bind_generator(m);
}
