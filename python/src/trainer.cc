// The Trainer (its options the keywords of a `train --config` file, its callbacks Python callables)
// and plot_training.
#include <cmath>
#include <memory>
#include <utility>

#include "module.h"
#include "transformer/trainer.h"

namespace transformer::python {

namespace {
// A Python callable kept by a C++ callback. Copies of the callback share it without touching its
// reference count; the last one releases it with the GIL held.
std::shared_ptr<py::object> keep(const py::object& f) {
  return std::shared_ptr<py::object>(new py::object(f), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
}

// The Trainer's callbacks, calling Python with the GIL held. A Ctrl-C (KeyboardInterrupt) noticed at
// a step asks the training to stop, as SIGINT does for `transformer train`: the step completes, a
// checkpoint is saved, and run() returns a result with interrupted = True.
struct PythonCallbacks {
  py::object on_message, on_progress, on_metrics;
  bool verbose = true;
};

// The callables one callback calls in turn: with verbose, the default display's method first.
py::list calls(const py::object& display, const char* method, const py::object& given) {
  py::list out;
  if (!display.is_none()) out.append(display.attr(method));
  if (!given.is_none()) out.append(given);
  return out;
}

TrainCallbacks make_callbacks(const PythonCallbacks& p, Trainer** trainer) {
  // Checked before anything is trained or written (a wrong one once failed after the vocabulary).
  for (const auto& [name, f] : {std::pair{"on_message", &p.on_message}, std::pair{"on_progress", &p.on_progress},
                                std::pair{"on_metrics", &p.on_metrics}})
    if (!f->is_none() && !PyCallable_Check(f->ptr()))
      throw py::type_error(std::string(name) + " must be callable or None, got " + py::repr(*f).cast<std::string>());
  // verbose: the command line's log lines and progress on sys.stderr (python/transformer/_progress.py).
  const py::object display =
      p.verbose ? py::module_::import("transformer._progress").attr("TrainingDisplay")() : py::object(py::none());
  TrainCallbacks c;
  const py::list messages = calls(display, "message", p.on_message);
  if (!messages.empty()) {
    auto fs = keep(messages);
    c.on_message = [fs](const std::string& line) {
      py::gil_scoped_acquire gil;
      for (const py::handle f : *fs) f(text_of(line));
    };
  }
  auto progress = keep(calls(display, "progress", p.on_progress));
  c.on_progress = [progress, trainer](const Progress& pr) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() < 0) {
      if (!PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) throw py::error_already_set();
      PyErr_Clear();
      if (*trainer) (*trainer)->request_stop();
    }
    if (py::len(*progress) == 0) return;
    const py::object value = py::cast(pr);
    for (const py::handle f : *progress) f(value);
  };
  if (!p.on_metrics.is_none()) {
    auto f = keep(p.on_metrics);
    c.on_metrics = [f](const MetricsRecord& r) {
      py::gil_scoped_acquire gil;
      (*f)(r);
    };
  }
  return c;
}

// A Trainer and the pointer its callbacks use to reach it (for a stop on Ctrl-C).
struct PyTrainer {
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<Trainer*> self = std::make_unique<Trainer*>(nullptr);
};

// The keywords as the JSON train_options_from_json reads: paths (os.PathLike, bytes) as str, a float
// that is not finite refused by its keyword (JSON has no NaN).
// A keyword given as None takes its default (model=None: the preset's model).
// An unknown keyword is Python's TypeError, naming the nearest known one (a training option, or a
// keyword of Trainer itself).
void check_option_names(const py::kwargs& given) {
  const TrainOptions defaults;
  py::list names = py::module_::import("json").attr("loads")(train_options_to_json(defaults));
  for (const char* other : {"config", "resolved_model", "mask_id"}) names.append(other);  // in a run's config.json
  for (const auto& [key, value] : given) {
    if (names.contains(key)) continue;
    for (const char* own : {"on_message", "on_progress", "on_metrics", "verbose"}) names.append(own);
    const py::list close = py::module_::import("difflib").attr("get_close_matches")(key, names, 1);
    std::string message = "Trainer() got an unexpected keyword argument " + py::repr(key).cast<std::string>() +
                           " (not a training option)";
    if (!close.empty()) message += "; did you mean " + py::repr(close[0]).cast<std::string>() + "?";
    throw py::type_error(message);
  }
}

TrainOptions options_from_kwargs(const py::kwargs& given) {
  check_option_names(given);
  py::dict kwargs;
  for (const auto& [key, value] : given)
    if (!value.is_none()) kwargs[key] = value;
  for (const auto& [key, value] : kwargs)
    if (py::isinstance<py::float_>(value) && !std::isfinite(value.cast<double>()))
      throw Error("training option '" + key.cast<std::string>() + "' must be a finite number, got " +
                  py::repr(value).cast<std::string>());
  const py::module_ os = py::module_::import("os");
  const std::string json = py::module_::import("json")
                               .attr("dumps")(kwargs, py::arg("default") = os.attr("fsdecode"),
                                              py::arg("allow_nan") = false)
                               .cast<std::string>();
  return train_options_from_json(json);
}

std::unique_ptr<PyTrainer> make_trainer(const py::object& on_message, const py::object& on_progress,
                                        const py::object& on_metrics, bool verbose, const py::kwargs& kwargs) {
  const TrainOptions options = options_from_kwargs(kwargs);
  auto t = std::make_unique<PyTrainer>();
  const TrainCallbacks callbacks = make_callbacks({on_message, on_progress, on_metrics, verbose}, t->self.get());
  {
    py::gil_scoped_release release;
    t->trainer = std::make_unique<Trainer>(options, callbacks);
  }
  *t->self = t->trainer.get();
  return t;
}

constexpr const char* kTrainerDoc = R"(Trains a translation model from parallel text, as `transformer train`.

Trainer(*, on_message=None, on_progress=None, on_metrics=None, verbose=True, **options)

options: the fields of a `train --config` file (docs/training.md), e.g. train_source, train_target,
valid_source, valid_target, run_dir, preset, model={"d_model": 256}, max_steps, seed, threads;
an unknown field raises TypeError (with the nearest field's name), a wrong type Error naming it; a
field given as None takes its default. The constructor validates them, takes the run folder's lock
and prepares data, vocabulary and model (or resumes with resume=True). verbose: the command line's
log lines and progress on sys.stderr (a line updated in place on a terminal, one line per log step
otherwise); verbose=False prints nothing. on_message(str) gets the log lines, on_progress(Progress)
each step, on_metrics(MetricsRecord) each metrics.jsonl record (with verbose too). Calls release the GIL; the callbacks run with it. One call at a time: a call from a second
thread (step, validate, save_checkpoint, result, finished) waits for the one under way. Ctrl-C during run() or step() stops the
training as request_stop() does (a checkpoint is saved; the result says interrupted).)";

void bind_trainer_class(py::module_& m) {
  py::class_<PyTrainer>(m, "Trainer", kTrainerDoc)
      .def(py::init(&make_trainer), py::kw_only(), py::arg("on_message") = py::none(),
           py::arg("on_progress") = py::none(), py::arg("on_metrics") = py::none(), py::arg("verbose") = true)
      .def("run", [](PyTrainer& t) {
             py::gil_scoped_release release;
             return t.trainer->run();
           }, "Trains to the end (a limit, patience, or a stop request); returns the TrainResult.")
      .def("step", [](PyTrainer& t) {
             py::gil_scoped_release release;
             return t.trainer->step();
           }, "One optimizer step with what the schedule adds (log, validation, checkpoint); finishes the training "
              "at a limit or a stop request.")
      .def("validate", [](PyTrainer& t) {
             py::gil_scoped_release release;
             return t.trainer->validate();
           }, "A validation of the current model, now (needs validation files); records nothing.")
      .def("save_checkpoint", [](PyTrainer& t) {
             py::gil_scoped_release release;
             return t.trainer->save_checkpoint();
           }, "Writes a checkpoint of the current step; returns its path.")
      .def("request_stop", [](PyTrainer& t) { t.trainer->request_stop(); },
           "Asks the training to stop after the step under way (a checkpoint is saved). Safe from any thread.")
      // These wait for the Trainer's lock, which a step holds while its callbacks take the GIL:
      // waited for without the GIL.
      .def_property_readonly("finished", [](const PyTrainer& t) {
             py::gil_scoped_release release;
             return t.trainer->finished();
           })
      .def_property_readonly("result", [](const PyTrainer& t) {
             py::gil_scoped_release release;
             return t.trainer->result();
           })
      .def_property_readonly("options", [](const PyTrainer& t) {
             return py::module_::import("json").attr("loads")(train_options_to_json(t.trainer->options()));
           }, "the resolved options, as the run folder's config.json holds them");
}
}  // namespace

void bind_trainer(py::module_& m) {
  bind_trainer_class(m);
  m.def("plot_training", [](const py::object& run_dir, const py::object& output) {
          const std::string run = fspath(run_dir), out = fspath_or_none(output).value_or("");
          py::gil_scoped_release release;
          return plot_training(run, out);
        }, py::arg("run_dir"), py::arg("output") = py::none(),
        "Draws RUN/metrics.jsonl's loss and BLEU curves as SVG (default RUN/training.svg); returns the path.");
}

}  // namespace transformer::python
