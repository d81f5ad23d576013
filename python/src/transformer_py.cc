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
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "transformer/demo.h"
#include "transformer/error.h"
#include "transformer/metrics.h"
#include "transformer/model.h"
#include "transformer/text.h"
#include "transformer/trainer.h"
#include "transformer/translator.h"

namespace py = pybind11;
using namespace transformer;

namespace {

// str, bytes or os.PathLike → a path string: the file system's own bytes (os.fsencode), so that a
// bytes path stays itself (not "b'...'") and a str one undecodable bytes came from is given back.
std::string fspath(const py::handle& path) {
  return py::bytes(py::module_::import("os").attr("fsencode")(path)).cast<std::string>();
}
std::optional<std::string> fspath_or_none(const py::handle& path) {
  if (path.is_none()) return std::nullopt;
  return fspath(path);
}

// Text the library produced (a decoded hypothesis) as str; bytes that are not UTF-8, which a
// vocabulary's byte pieces could give, become U+FFFD rather than a UnicodeDecodeError.
py::str text_of(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

TranslatorOptions::Weights parse_weights(const std::string& name) {
  if (name == "packed") return TranslatorOptions::Weights::kPacked;
  if (name == "int8") return TranslatorOptions::Weights::kInt8;
  if (name == "plain") return TranslatorOptions::Weights::kPlain;
  if (name == "bf16") return TranslatorOptions::Weights::kBf16;
  throw Error("weights must be 'packed', 'int8', 'plain' or 'bf16', got '" + name + "'");
}

// A float as Python prints it (repr): the shortest digits that read back to it, nan, inf.
std::string repr_float(double x) { return py::repr(py::float_(x)).cast<std::string>(); }

// The keyword arguments of translate and translate_ids, in TranslateOptions.
struct TranslateArgs {
  int64_t beam, n_best;
  double length_penalty, max_length_a, max_length_b;
  int64_t min_length;
  bool attention;
  int64_t batch_size, max_input_tokens;
  std::optional<int64_t> max_memory;
  int64_t parallel_batches;
  int64_t sampling_topk;
  double sampling_topp, sampling_temperature;
  uint64_t seed;
  bool return_scores;

  TranslateOptions options() const {
    TranslateOptions o;
    o.search.beam_size = beam;
    o.search.n_best = n_best;
    o.search.length_penalty = length_penalty;
    o.search.max_length_a = max_length_a;
    o.search.max_length_b = max_length_b;
    o.search.min_length = min_length;
    o.search.record_attention = attention;
    o.batch_sentences = batch_size;
    o.max_input_tokens = max_input_tokens;
    o.max_memory = max_memory.value_or(-1);
    o.parallel_batches = parallel_batches;
    o.search.sampling_topk = sampling_topk;
    o.search.sampling_topp = sampling_topp;
    o.search.sampling_temperature = sampling_temperature;
    o.search.seed = seed;
    o.search.return_scores = return_scores;
    return o;
  }
};

template <class Sources>
using TranslateMethod = std::vector<Translation> (Translator::*)(const Sources&, const TranslateOptions&,
                                                                 const Sources&) const;

template <class Sources>
void def_translate(py::class_<Translator>& c, const char* name, const char* argument, TranslateMethod<Sources> method,
                   const char* doc) {
  c.def(
      name,
      [method](const Translator& t, const Sources& sources, int64_t beam, int64_t n_best, double length_penalty,
               double max_length_a, double max_length_b, int64_t min_length, bool attention, int64_t batch_size,
               int64_t max_input_tokens, std::optional<int64_t> max_memory, int64_t parallel_batches,
               int64_t sampling_topk, double sampling_topp, double sampling_temperature, uint64_t seed,
               const std::optional<Sources>& target_prefixes, bool return_scores) {
        const TranslateOptions o =
            TranslateArgs{beam,       n_best,     length_penalty,   max_length_a, max_length_b,
                          min_length, attention,  batch_size,       max_input_tokens, max_memory,
                          parallel_batches, sampling_topk, sampling_topp, sampling_temperature, seed,
                          return_scores}
                .options();
        const Sources prefixes = target_prefixes.value_or(Sources{});
        py::gil_scoped_release release;
        return (t.*method)(sources, o, prefixes);
      },
      py::arg(argument), py::kw_only(), py::arg("beam") = 4, py::arg("n_best") = 1, py::arg("length_penalty") = 0.6,
      py::arg("max_length_a") = 1.0, py::arg("max_length_b") = 50.0, py::arg("min_length") = 0,
      py::arg("attention") = false, py::arg("batch_size") = 64, py::arg("max_input_tokens") = 1024,
      py::arg("max_memory") = py::none(), py::arg("parallel_batches") = 0, py::arg("sampling_topk") = 0,
      py::arg("sampling_topp") = 1.0, py::arg("sampling_temperature") = 1.0, py::arg("seed") = 0,
      py::arg("target_prefixes") = py::none(), py::arg("return_scores") = true, doc);
}

template <class Sources>
using ScoreMethod = std::vector<Score> (Translator::*)(const Sources&, const Sources&, const ScoreOptions&) const;

template <class Sources>
void def_score(py::class_<Translator>& c, const char* name, ScoreMethod<Sources> method, const char* doc) {
  c.def(
      name,
      [method](const Translator& t, const Sources& sources, const Sources& targets, int64_t batch_size,
               int64_t max_input_tokens) {
        ScoreOptions o;
        o.batch_sentences = batch_size;
        o.max_input_tokens = max_input_tokens;
        py::gil_scoped_release release;
        return (t.*method)(sources, targets, o);
      },
      py::arg("sources"), py::arg("targets"), py::kw_only(), py::arg("batch_size") = 64,
      py::arg("max_input_tokens") = 1024, doc);
}

// A read-only NumPy view of a hypothesis's attention, kept alive by the hypothesis's Python object.
py::object attention_array(const py::object& self) {
  const Attention& a = self.cast<const Hypothesis&>().attention;
  if (a.empty()) return py::none();
  py::array_t<float> array({a.layers, a.heads, a.target_length, a.source_length}, a.weights.data(), self);
  array.attr("setflags")(py::arg("write") = false);
  return array;
}

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
};

TrainCallbacks make_callbacks(const PythonCallbacks& p, Trainer** trainer) {
  // Checked before anything is trained or written (a wrong one once failed after the vocabulary).
  for (const auto& [name, f] : {std::pair{"on_message", &p.on_message}, std::pair{"on_progress", &p.on_progress},
                                std::pair{"on_metrics", &p.on_metrics}})
    if (!f->is_none() && !PyCallable_Check(f->ptr()))
      throw py::type_error(std::string(name) + " must be callable or None, got " + py::repr(*f).cast<std::string>());
  TrainCallbacks c;
  if (!p.on_message.is_none()) {
    auto f = keep(p.on_message);
    c.on_message = [f](const std::string& line) {
      py::gil_scoped_acquire gil;
      (*f)(text_of(line));
    };
  }
  auto progress = p.on_progress.is_none() ? nullptr : keep(p.on_progress);
  c.on_progress = [progress, trainer](const Progress& pr) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() < 0) {
      if (!PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) throw py::error_already_set();
      PyErr_Clear();
      if (*trainer) (*trainer)->request_stop();
    }
    if (progress) (*progress)(pr);
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
TrainOptions options_from_kwargs(const py::kwargs& given) {
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

template <class T>
std::string repr_repairs(const T& r) {
  return std::string("Repairs(nul_bytes=") + (r.nul_bytes ? "True" : "False") +
         ", invalid_utf8=" + (r.invalid_utf8 ? "True" : "False") + ")";
}

}  // namespace

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

  // ---- text
  py::class_<Repairs>(m, "Repairs", "What clean_input changed in a line.")
      .def_readonly("nul_bytes", &Repairs::nul_bytes, "NUL bytes were replaced by spaces")
      .def_readonly("invalid_utf8", &Repairs::invalid_utf8, "ill-formed UTF-8 was replaced by U+FFFD")
      .def("any", &Repairs::any, "whether anything was repaired")
      .def("__bool__", &Repairs::any)
      .def("__repr__", &repr_repairs<Repairs>);

  py::class_<CleanText>(m, "CleanText", "A line made readable, and what was repaired.")
      .def_property_readonly("text", [](const CleanText& c) { return text_of(c.text); })
      .def_readonly("repairs", &CleanText::repairs)
      .def("__repr__", [](const CleanText& c) { return "CleanText(text=" + py::repr(text_of(c.text)).cast<std::string>() + ", repairs=" + repr_repairs(c.repairs) + ")"; });

  m.def(
      "clean_input", [](const std::string& line) { return clean_input(line); }, py::arg("line"),
      "The one input policy of translation and scoring: NUL bytes become spaces, surrounding whitespace is "
      "trimmed, bytes that are not UTF-8 become U+FFFD (give bytes to have them checked). Returns CleanText.");
  m.def("repair_warnings", &repair_warnings, py::arg("repairs"), py::arg("what"),
        "The warnings the command line prints for a line's repairs; `what` names the line (\"line 3\").");

  // ---- results
  py::class_<LoadNotes>(m, "LoadNotes", "What the loader wants a user to see.")
      .def_readonly("notes", &LoadNotes::notes, "informational notes")
      .def_readonly("warnings", &LoadNotes::warnings, "something may be wrong")
      .def("__repr__", [](const LoadNotes& n) {
        return "LoadNotes(notes=" + py::repr(py::cast(n.notes)).cast<std::string>() +
               ", warnings=" + py::repr(py::cast(n.warnings)).cast<std::string>() + ")";
      });

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
          "the best hypothesis; raises Error for an empty input, which has none")
      .def_readonly("source_ids", &Translation::source_ids,
                    "the encoded (maybe truncated) source, without end of sentence")
      .def_readonly("truncated", &Translation::truncated, "the source had more than max_input_tokens tokens")
      .def_readonly("repairs", &Translation::repairs, "what clean_input changed in the input line")
      .def_readonly("target_prefix_ids", &Translation::target_prefix_ids,
                    "the forced target prefix, encoded: every hypothesis's ids start with it")
      .def_readonly("prefix_repairs", &Translation::prefix_repairs, "what clean_input changed in the target prefix")
      .def("__len__", [](const Translation& t) { return t.hypotheses.size(); })
      .def("__repr__", [](const Translation& t) {
        std::string best = t.hypotheses.empty() ? "None" : py::repr(text_of(t.hypotheses.front().text)).cast<std::string>();
        return "Translation(best=" + best + ", hypotheses=" + std::to_string(t.hypotheses.size()) + ")";
      });

  py::class_<Score>(m, "Score", "log p(target | source) by teacher forcing.")
      .def_readonly("total", &Score::total, "sum of the log-probabilities of the target's tokens and end of sentence")
      .def_readonly("per_token", &Score::per_token, "total / tokens")
      .def_readonly("tokens", &Score::tokens, "the target's tokens, end of sentence included")
      .def_readonly("truncated", &Score::truncated, "a side had more than max_input_tokens tokens")
      .def_readonly("source_repairs", &Score::source_repairs)
      .def_readonly("target_repairs", &Score::target_repairs)
      .def("__repr__", [](const Score& s) {
        return "Score(total=" + repr_float(s.total) + ", tokens=" +
               std::to_string(s.tokens) + ")";
      });

  // ---- the translator
  py::class_<Translator> translator(m, "Translator", R"(A model and its vocabulary, loaded once.

Translator(model_path, vocab=None, *, need_vocab=True, verify=True, weights="packed", shortlist=None, threads=0,
           device="cpu")

vocab: the SentencePiece model (default: vocab.model beside the model file); need_vocab=False loads
none (translate_ids and score_ids only). verify: check the model file's checksum. weights: "packed"
(fastest in float32), "int8" (faster, slightly less exact), "plain" (as trained; score needs it) or
"bf16" (bfloat16 products, as train --bf16: on a CPU faster with AVX-512 BF16, slower without;
score takes it too).
shortlist: a file from `transformer shortlist`. threads: of this translator's calls (0: all cores).
device: "cpu", or "cuda" (the first NVIDIA GPU, in a build with the CUDA backend; "packed", "plain"
or "bf16" weights there, no "int8").
The loader's warnings (load_notes.warnings) are also issued as UserWarning. Calls release the GIL;
several threads may use one Translator at once.)");
  translator
      .def(py::init([](const py::object& model_path, const py::object& vocab, bool need_vocab, bool verify,
                       const std::string& weights, const py::object& shortlist, int threads,
                       const std::string& device) {
             TranslatorOptions o;
             const std::string path = fspath(model_path);
             o.vocab = fspath_or_none(vocab).value_or("");
             o.need_vocab = need_vocab;
             o.verify = verify;
             o.weights = parse_weights(weights);
             o.shortlist = fspath_or_none(shortlist).value_or("");
             o.threads = threads;
             o.device = device;
             std::unique_ptr<Translator> t;
             {
               py::gil_scoped_release release;
               t = std::make_unique<Translator>(path, o);
             }
             // What the command line prints as "warning: ..." (a model without a vocabulary
             // fingerprint) is a UserWarning; the informational notes stay in load_notes.
             for (const std::string& w : t->load_notes().warnings)
               if (PyErr_WarnEx(PyExc_UserWarning, w.c_str(), 1) < 0) throw py::error_already_set();
             return t;
           }),
           py::arg("model_path"), py::arg("vocab") = py::none(), py::kw_only(), py::arg("need_vocab") = true,
           py::arg("verify") = true, py::arg("weights") = "packed", py::arg("shortlist") = py::none(),
           py::arg("threads") = 0, py::arg("device") = "cpu")
      .def("encode", &Translator::encode, py::arg("text"), "text (str or bytes) → token ids (no end of sentence), cleaned first as translate cleans a line")
      .def("decode", [](const Translator& t, const std::vector<int32_t>& ids) { return text_of(t.decode(ids)); },
           py::arg("ids"), "token ids → text")
      .def("piece", [](const Translator& t, int32_t id) { return text_of(t.piece(id)); }, py::arg("id"),
           "one token's piece, as the vocabulary spells it")
      .def("parse_ids", &Translator::parse_ids, py::arg("line"), py::arg("line_number") = 1,
           "space-separated token ids, as `transformer translate --ids` reads them; errors name line_number")
      .def_property_readonly("has_vocab", &Translator::has_vocab)
      .def_property_readonly("vocab_size", &Translator::vocab_size)
      .def_property_readonly("model_path", &Translator::model_path)
      .def_property_readonly("vocab_fingerprint", &Translator::vocab_fingerprint,
                             "the fingerprint of the vocabulary the model was trained with (\"\" if not recorded)")
      .def_property_readonly("load_notes", &Translator::load_notes,
                             "the loader's notes and warnings (the command line prints them)")
      .def("__repr__", [](const Translator& t) {
        return "Translator(" + py::repr(py::str(t.model_path())).cast<std::string>() + ")";
      });
  def_translate<std::vector<std::string>>(
      translator, "translate", "lines", &Translator::translate,
      "Sentences → a list of Translation, in input order (sorted by length into batches internally). "
      "sampling_topk (0: search; -1: the whole vocabulary; k: the k most probable), sampling_topp, "
      "sampling_temperature and seed sample instead of searching (beam=1); target_prefixes (one per line, \"\" "
      "for none) force the start of each translation. return_scores=False: scores are NaN, and greedy search "
      "(beam=1) is faster.");
  def_translate<std::vector<std::vector<int32_t>>>(
      translator, "translate_ids", "sources", &Translator::translate_ids,
      "Token-id lists (without end of sentence) → Translations whose hypotheses have ids only (text \"\").");
  def_score<std::vector<std::string>>(
      translator, "score", &Translator::score,
      "log p(targets[i] | sources[i]) by teacher forcing; needs weights=\"plain\". A list of Score.");
  def_score<std::vector<std::vector<int32_t>>>(translator, "score_ids", &Translator::score_ids,
                                               "score, for token-id lists.");

  // ---- model files
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

  // ---- metrics
  py::class_<BleuScore>(m, "BleuScore", "Corpus BLEU as sacreBLEU 2.x computes it.")
      .def_readonly("score", &BleuScore::score, "0..100")
      .def_property_readonly("precisions",
                             [](const BleuScore& b) { return std::vector<double>(b.precisions, b.precisions + 4); },
                             "n-gram precisions, n = 1..4 (0..100, smoothed)")
      .def_readonly("bp", &BleuScore::bp, "brevity penalty")
      .def_readonly("ratio", &BleuScore::ratio, "hyp_len / ref_len")
      .def_property_readonly("hyp_len", [](const BleuScore& b) { return b.stats.hyp_len; })
      .def_property_readonly("ref_len", [](const BleuScore& b) { return b.stats.ref_len; })
      .def_property_readonly(
          "counts", [](const BleuScore& b) { return std::vector<int64_t>(b.stats.correct, b.stats.correct + 4); },
          "clipped n-gram matches, n = 1..4")
      .def_property_readonly(
          "totals", [](const BleuScore& b) { return std::vector<int64_t>(b.stats.total, b.stats.total + 4); },
          "hypothesis n-grams, n = 1..4")
      .def("format", &BleuScore::format, "sacreBLEU's line: \"BLEU = 35.12 65.3/42.1/29.8/21.0 (BP = ...)\"")
      .def("__str__", &BleuScore::format)
      .def("__float__", [](const BleuScore& b) { return b.score; })
      .def("__repr__", [](const BleuScore& b) { return "<" + b.format() + ">"; });

  py::class_<ChrfScore>(m, "ChrfScore", "Corpus chrF as sacreBLEU 2.x computes it.")
      .def_readonly("score", &ChrfScore::score, "0..100")
      .def_readonly("name", &ChrfScore::name, "\"chrF2\", \"chrF2++\"")
      .def("format", &ChrfScore::format, "sacreBLEU's line: \"chrF2 = 57.31\"")
      .def("__str__", &ChrfScore::format)
      .def("__float__", [](const ChrfScore& c) { return c.score; })
      .def("__repr__", [](const ChrfScore& c) { return "<" + c.format() + ">"; });

  py::class_<ExactMatch>(m, "ExactMatch", "The share of segments equal to one of their references.")
      .def_readonly("matches", &ExactMatch::matches)
      .def_readonly("segments", &ExactMatch::segments)
      .def_readonly("score", &ExactMatch::score, "100 · matches / segments")
      .def("__float__", [](const ExactMatch& e) { return e.score; })
      .def("__repr__", [](const ExactMatch& e) {
        return "ExactMatch(matches=" + std::to_string(e.matches) + ", segments=" + std::to_string(e.segments) + ")";
      });

  using Streams = std::vector<std::vector<std::string>>;
  m.def(
      "bleu",
      [](const std::vector<std::string>& hyps, const Streams& refs, bool lowercase, const std::string& tokenize) {
        BleuOptions o;
        o.lowercase = lowercase;
        o.tokenize = parse_bleu_tokenize(tokenize);
        py::gil_scoped_release release;
        return corpus_bleu(hyps, refs, o);
      },
      py::arg("hyps"), py::arg("refs"), py::kw_only(), py::arg("lowercase") = false, py::arg("tokenize") = "13a",
      "Corpus BLEU, exactly as sacreBLEU 2.x with its defaults. refs is a list of reference streams: refs[k][i] "
      "is the k-th reference of hyps[i] (one reference each: [refs]).");
  m.def(
      "chrf",
      [](const std::vector<std::string>& hyps, const Streams& refs, bool lowercase, int char_order, int word_order,
         int beta, bool whitespace, bool eps_smoothing) {
        ChrfOptions o;
        o.lowercase = lowercase;
        o.char_order = char_order;
        o.word_order = word_order;
        o.beta = beta;
        o.whitespace = whitespace;
        o.eps_smoothing = eps_smoothing;
        py::gil_scoped_release release;
        return corpus_chrf(hyps, refs, o);
      },
      py::arg("hyps"), py::arg("refs"), py::kw_only(), py::arg("lowercase") = false, py::arg("char_order") = 6,
      py::arg("word_order") = 0, py::arg("beta") = 2, py::arg("whitespace") = false, py::arg("eps_smoothing") = false,
      "Corpus chrF (word_order=2: chrF++), exactly as sacreBLEU 2.x. refs as for bleu.");
  m.def(
      "exact_match",
      [](const std::vector<std::string>& hyps, const Streams& refs, bool lowercase) {
        py::gil_scoped_release release;
        return exact_match(hyps, refs, lowercase);
      },
      py::arg("hyps"), py::arg("refs"), py::kw_only(), py::arg("lowercase") = false,
      "The share of hypotheses identical to one of their references (after Unicode lowercasing when lowercase). "
      "refs as for bleu.");

  // ---- training
  py::class_<Progress>(m, "Progress", "What one optimizer step did, as the command line's progress line shows it.")
      .def_readonly("step", &Progress::step)
      .def_readonly("epoch", &Progress::epoch)
      .def_readonly("loss", &Progress::loss, "mean label-smoothed loss per target token since the last log step")
      .def_readonly("learning_rate", &Progress::learning_rate)
      .def_readonly("tokens_per_s", &Progress::tokens_per_s)
      .def_readonly("elapsed_s", &Progress::elapsed_s)
      .def_readonly("eta_s", &Progress::eta_s, "seconds to max_steps at this pace; -1 when max_steps is 0")
      .def_readonly("log_step", &Progress::log_step, "a log step: a training record follows")
      .def("__repr__", [](const Progress& p) {
        return "Progress(step=" + std::to_string(p.step) + ", loss=" + repr_float(p.loss) + ")";
      });
  py::class_<MetricsRecord>(m, "MetricsRecord", "One record of RUN/metrics.jsonl.")
      .def_property_readonly("kind", [](const MetricsRecord& r) {
        return r.kind == MetricsRecord::Kind::kTraining ? "training" : "validation";
      }, "\"training\" or \"validation\"")
      .def_readonly("step", &MetricsRecord::step)
      .def_readonly("values", &MetricsRecord::values, "the record's other fields under their metrics.jsonl names")
      .def("__repr__", [](const MetricsRecord& r) {
        return std::string("MetricsRecord(kind=") + (r.kind == MetricsRecord::Kind::kTraining ? "'training'" : "'validation'") +
               ", step=" + std::to_string(r.step) + ", values=" + py::repr(py::cast(r.values)).cast<std::string>() + ")";
      });
  py::class_<ValidationResult>(m, "ValidationResult", "A validation's loss, perplexity, BLEU and exact match.")
      .def_readonly("loss", &ValidationResult::loss)
      .def_readonly("ppl", &ValidationResult::ppl)
      .def_readonly("bleu", &ValidationResult::bleu)
      .def_readonly("exact", &ValidationResult::exact, "fraction of translations equal to their reference")
      .def("__repr__", [](const ValidationResult& v) {
        return "ValidationResult(loss=" + repr_float(v.loss) + ", ppl=" + repr_float(v.ppl) + ", bleu=" + repr_float(v.bleu) +
               ", exact=" + repr_float(v.exact) + ")";
      });
  py::class_<StepResult>(m, "StepResult", "What one Trainer.step() did.")
      .def_readonly("step", &StepResult::step)
      .def_readonly("epoch", &StepResult::epoch)
      .def_readonly("stepped", &StepResult::stepped, "an optimizer step was taken")
      .def_readonly("loss", &StepResult::loss)
      .def_readonly("tokens", &StepResult::tokens)
      .def_readonly("learning_rate", &StepResult::learning_rate)
      .def_readonly("finished", &StepResult::finished)
      .def("__repr__", [](const StepResult& r) {
        return "StepResult(step=" + std::to_string(r.step) + ", epoch=" + std::to_string(r.epoch) +
               ", stepped=" + (r.stepped ? "True" : "False") + ", loss=" + repr_float(r.loss) + ", tokens=" +
               std::to_string(r.tokens) + ", learning_rate=" + repr_float(r.learning_rate) +
               ", finished=" + (r.finished ? "True" : "False") + ")";
      });
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

  py::class_<PyTrainer>(m, "Trainer", R"(Trains a translation model from parallel text, as `transformer train`.

Trainer(*, on_message=None, on_progress=None, on_metrics=None, **options)

options: the fields of a `train --config` file (docs/training.md), e.g. train_source, train_target,
valid_source, valid_target, run_dir, preset, model={"d_model": 256}, max_steps, seed, threads;
unknown fields and wrong types raise Error naming them; a field given as None takes its default. The constructor validates them, takes the run
folder's lock and prepares data, vocabulary and model (or resumes with resume=True). on_message(str)
gets the log lines, on_progress(Progress) each step, on_metrics(MetricsRecord) each metrics.jsonl
record. Calls release the GIL; the callbacks run with it. Ctrl-C during run() or step() stops the
training as request_stop() does (a checkpoint is saved; the result says interrupted).)")
      .def(py::init([](const py::object& on_message, const py::object& on_progress, const py::object& on_metrics,
                       const py::kwargs& kwargs) {
             const TrainOptions options = options_from_kwargs(kwargs);
             auto t = std::make_unique<PyTrainer>();
             const TrainCallbacks callbacks = make_callbacks({on_message, on_progress, on_metrics}, t->self.get());
             {
               py::gil_scoped_release release;
               t->trainer = std::make_unique<Trainer>(options, callbacks);
             }
             *t->self = t->trainer.get();
             return t;
           }),
           py::kw_only(), py::arg("on_message") = py::none(), py::arg("on_progress") = py::none(),
           py::arg("on_metrics") = py::none())
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
      .def_property_readonly("finished", [](const PyTrainer& t) { return t.trainer->finished(); })
      .def_property_readonly("result", [](const PyTrainer& t) { return t.trainer->result(); })
      .def_property_readonly("options", [](const PyTrainer& t) {
             return py::module_::import("json").attr("loads")(train_options_to_json(t.trainer->options()));
           }, "the resolved options, as the run folder's config.json holds them");

  m.def("plot_training", [](const py::object& run_dir, const py::object& output) {
          const std::string run = fspath(run_dir), out = fspath_or_none(output).value_or("");
          py::gil_scoped_release release;
          return plot_training(run, out);
        }, py::arg("run_dir"), py::arg("output") = py::none(),
        "Draws RUN/metrics.jsonl's loss and BLEU curves as SVG (default RUN/training.svg); returns the path.");

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
