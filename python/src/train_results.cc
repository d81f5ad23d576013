// What training reports: Progress (a step), MetricsRecord (a metrics.jsonl record),
// ValidationResult, StepResult (Trainer.step) and TrainResult (how a training ended).
#include "module.h"
#include "transformer/trainer.h"

namespace transformer::python {

namespace {
const char* kind_name(MetricsRecord::Kind kind) {
  return kind == MetricsRecord::Kind::kTraining ? "training" : "validation";
}

// The learning rate as `lr`, the name of metrics.jsonl, MetricsRecord.values and the progress line;
// `learning_rate`, its earlier name, stays as a deprecated alias (DeprecationWarning).
template <class T>
void def_lr(py::class_<T>& c) {
  c.def_readonly("lr", &T::learning_rate, "this step's learning rate (\"lr\" in metrics.jsonl)")
      .def_property_readonly(
          "learning_rate",
          [](const T& x) {
            if (PyErr_WarnEx(PyExc_DeprecationWarning, "learning_rate is deprecated; use lr", 1) < 0)
              throw py::error_already_set();
            return x.learning_rate;
          },
          "deprecated: lr");
}

void bind_progress_and_records(py::module_& m) {
  py::class_<Progress> progress(m, "Progress", "What one optimizer step did, as the command line's progress line shows it.");
  def_lr(progress);
  progress.def_readonly("step", &Progress::step)
      .def_readonly("epoch", &Progress::epoch)
      .def_readonly("loss", &Progress::loss, "mean label-smoothed loss per target token since the last log step")
      .def_readonly("tokens_per_s", &Progress::tokens_per_s)
      .def_readonly("elapsed_s", &Progress::elapsed_s)
      .def_readonly("eta_s", &Progress::eta_s,
                    "seconds until the first limit (max_steps, max_epochs, max_seconds) ends the training; -1 "
                    "when none can be estimated")
      .def_readonly("log_step", &Progress::log_step, "a log step: a training record follows")
      .def("__repr__", [](const Progress& p) {
        return "Progress(step=" + std::to_string(p.step) + ", loss=" + repr_float(p.loss) + ")";
      });
  py::class_<MetricsRecord>(m, "MetricsRecord", "One record of RUN/metrics.jsonl.")
      .def_property_readonly(
          "kind", [](const MetricsRecord& r) { return kind_name(r.kind); }, "\"training\" or \"validation\"")
      .def_readonly("step", &MetricsRecord::step)
      .def_readonly("values", &MetricsRecord::values, "the record's other fields under their metrics.jsonl names")
      .def("__repr__", [](const MetricsRecord& r) {
        return std::string("MetricsRecord(kind='") + kind_name(r.kind) + "', step=" + std::to_string(r.step) +
               ", values=" + py::repr(py::cast(r.values)).cast<std::string>() + ")";
      });
}

void bind_validation_and_step(py::module_& m) {
  py::class_<ValidationResult>(m, "ValidationResult", "A validation's loss, perplexity, BLEU and exact match.")
      .def_readonly("loss", &ValidationResult::loss)
      .def_readonly("ppl", &ValidationResult::ppl)
      .def_readonly("bleu", &ValidationResult::bleu)
      .def_readonly("exact", &ValidationResult::exact, "fraction of translations equal to their reference")
      .def("__repr__", [](const ValidationResult& v) {
        return "ValidationResult(loss=" + repr_float(v.loss) + ", ppl=" + repr_float(v.ppl) +
               ", bleu=" + repr_float(v.bleu) + ", exact=" + repr_float(v.exact) + ")";
      });
  py::class_<StepResult> step(m, "StepResult", "What one Trainer.step() did.");
  def_lr(step);
  step.def_readonly("step", &StepResult::step)
      .def_readonly("epoch", &StepResult::epoch)
      .def_readonly("stepped", &StepResult::stepped, "an optimizer step was taken")
      .def_readonly("loss", &StepResult::loss)
      .def_readonly("tokens", &StepResult::tokens)
      .def_readonly("finished", &StepResult::finished)
      .def("__repr__", [](const StepResult& r) {
        return "StepResult(step=" + std::to_string(r.step) + ", epoch=" + std::to_string(r.epoch) +
               ", stepped=" + (r.stepped ? "True" : "False") + ", loss=" + repr_float(r.loss) + ", tokens=" +
               std::to_string(r.tokens) + ", lr=" + repr_float(r.learning_rate) +
               ", finished=" + (r.finished ? "True" : "False") + ")";
      });
}

void bind_train_result(py::module_& m) {
  py::class_<TrainResult>(m, "TrainResult", "How a training ended.")
      .def_readonly("steps", &TrainResult::steps)
      .def_readonly("epochs", &TrainResult::epochs)
      .def_readonly("last_loss", &TrainResult::last_loss)
      .def_readonly("best_score", &TrainResult::best_score)
      .def_readonly("final_model", &TrainResult::final_model, "RUN/model.safetensors, once finished")
      .def_readonly("stop_reason", &TrainResult::stop_reason)
      .def_readonly("interrupted", &TrainResult::interrupted, "stopped by request_stop() or Ctrl-C")
      .def("__repr__", [](const TrainResult& r) {
        return "TrainResult(steps=" + std::to_string(r.steps) + ", stop_reason=" +
               py::repr(py::str(r.stop_reason)).cast<std::string>() + ")";
      });
}
}  // namespace

void bind_train_results(py::module_& m) {
  bind_progress_and_records(m);
  bind_validation_and_step(m);
  bind_train_result(m);
}

}  // namespace transformer::python
