// The Translator: loading a model (its keywords TranslatorOptions'), translating and scoring (their
// keywords TranslateOptions' and ScoreOptions', defaults included).
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "module.h"
#include "transformer/translator.h"

namespace transformer::python {

using Weights = TranslatorOptions::Weights;

namespace {
// The weights keyword's names.
constexpr std::pair<const char*, Weights> kWeightNames[] = {
    {"packed", Weights::kPacked}, {"int8", Weights::kInt8}, {"plain", Weights::kPlain}, {"bf16", Weights::kBf16}};
}  // namespace

Weights parse_weights(const std::string& name) {
  for (const auto& [n, w] : kWeightNames)
    if (name == n) return w;
  throw Error("weights must be 'packed', 'int8', 'plain' or 'bf16', got '" + name + "'");
}

const char* weights_name(Weights weights) {
  for (const auto& [n, w] : kWeightNames)
    if (w == weights) return n;
  return "?";
}

TranslatorOptions load_options(const py::object& vocab, bool need_vocab, bool verify, const std::string& weights,
                               int threads, const std::string& device) {
  TranslatorOptions o;
  o.vocab = fspath_or_none(vocab).value_or("");
  o.need_vocab = need_vocab;
  o.verify = verify;
  o.weights = parse_weights(weights);
  o.threads = threads;
  o.device = device;
  return o;
}

namespace {

constexpr const char* kTranslatorDoc = R"(A model and its vocabulary, loaded once.

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
several threads may use one Translator at once.)";

std::unique_ptr<Translator> load_translator(const py::object& model_path, const py::object& vocab, bool need_vocab,
                                            bool verify, const std::string& weights, const py::object& shortlist,
                                            int threads, const std::string& device) {
  TranslatorOptions o = load_options(vocab, need_vocab, verify, weights, threads, device);
  o.shortlist = fspath_or_none(shortlist).value_or("");
  return load_with_warnings<Translator>(model_path, o);
}

void bind_construction(py::class_<Translator>& c) {
  const TranslatorOptions defaults;
  c.def(py::init(&load_translator), py::arg("model_path"), py::arg("vocab") = py::none(), py::kw_only(),
        py::arg("need_vocab") = defaults.need_vocab, py::arg("verify") = defaults.verify,
        py::arg("weights") = weights_name(defaults.weights), py::arg("shortlist") = py::none(),
        py::arg("threads") = defaults.threads, py::arg("device") = defaults.device);
}

void bind_vocabulary_and_info(py::class_<Translator>& c) {
  c.def("encode", &Translator::encode, py::arg("text"),
        "text (str or bytes) → token ids (no end of sentence), cleaned first as translate cleans a line")
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
}

template <class Sources>
using TranslateMethod = std::vector<Translation> (Translator::*)(const Sources&, const TranslateOptions&,
                                                                 const Sources&) const;

// translate or translate_ids: its keywords are TranslateOptions' fields (max_memory None: the
// option's default) and the target prefixes.
template <class Sources>
void def_translate(py::class_<Translator>& c, const char* name, const char* argument, TranslateMethod<Sources> method,
                   const char* doc) {
  const TranslateOptions defaults;
  const SearchOptions& search = defaults.search;
  c.def(
      name,
      [method](const Translator& t, const Sources& sources, int64_t beam, int64_t n_best, double length_penalty,
               double max_length_a, double max_length_b, int64_t min_length, bool attention, int64_t batch_size,
               int64_t max_input_tokens, std::optional<int64_t> max_memory, int64_t parallel_batches,
               int64_t sampling_topk, double sampling_topp, double sampling_temperature, uint64_t seed,
               const std::optional<Sources>& target_prefixes, bool return_scores, const std::string& source_lang,
               const std::string& target_lang) {
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
        o.max_memory = max_memory.value_or(o.max_memory);
        o.parallel_batches = parallel_batches;
        o.search.sampling_topk = sampling_topk;
        o.search.sampling_topp = sampling_topp;
        o.search.sampling_temperature = sampling_temperature;
        o.search.seed = seed;
        o.search.return_scores = return_scores;
        o.languages = {source_lang, target_lang};
        const Sources prefixes = target_prefixes.value_or(Sources{});
        py::gil_scoped_release release;
        return (t.*method)(sources, o, prefixes);
      },
      py::arg(argument), py::kw_only(), py::arg("beam") = search.beam_size, py::arg("n_best") = search.n_best,
      py::arg("length_penalty") = search.length_penalty, py::arg("max_length_a") = search.max_length_a,
      py::arg("max_length_b") = search.max_length_b, py::arg("min_length") = search.min_length,
      py::arg("attention") = search.record_attention, py::arg("batch_size") = defaults.batch_sentences,
      py::arg("max_input_tokens") = defaults.max_input_tokens, py::arg("max_memory") = py::none(),
      py::arg("parallel_batches") = defaults.parallel_batches, py::arg("sampling_topk") = search.sampling_topk,
      py::arg("sampling_topp") = search.sampling_topp, py::arg("sampling_temperature") = search.sampling_temperature,
      py::arg("seed") = search.seed, py::arg("target_prefixes") = py::none(),
      py::arg("return_scores") = search.return_scores, py::arg("source_lang") = "", py::arg("target_lang") = "", doc);
}

template <class Sources>
using ScoreMethod = std::vector<Score> (Translator::*)(const Sources&, const Sources&, const ScoreOptions&) const;

// score or score_ids: its keywords are ScoreOptions' fields.
template <class Sources>
void def_score(py::class_<Translator>& c, const char* name, ScoreMethod<Sources> method, const char* doc) {
  const ScoreOptions defaults;
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
      py::arg("sources"), py::arg("targets"), py::kw_only(), py::arg("batch_size") = defaults.batch_sentences,
      py::arg("max_input_tokens") = defaults.max_input_tokens, doc);
}

void bind_translate_and_score(py::class_<Translator>& c) {
  using Lines = std::vector<std::string>;
  using Ids = std::vector<std::vector<int32_t>>;
  def_translate<Lines>(
      c, "translate", "lines", &Translator::translate,
      "Sentences → a list of Translation, in input order (sorted by length into batches internally). "
      "sampling_topk (0: search; -1: the whole vocabulary; k: the k most probable), sampling_topp, "
      "sampling_temperature and seed sample instead of searching (beam=1); target_prefixes (one per line, \"\" "
      "for none) force the start of each translation. return_scores=False: scores are NaN, and greedy search "
      "(beam=1) is faster. source_lang and target_lang: a multilingual model's language codes (NLLB's eng_Latn, "
      "M2M-100's en): the source's token starts each line, the target's is forced first.");
  def_translate<Ids>(c, "translate_ids", "sources", &Translator::translate_ids,
                     "Token-id lists (without end of sentence) → Translations whose hypotheses have ids only (text "
                     "\"\"). The ids are taken as given (a multilingual model's source-language token included); "
                     "target_lang forces the target language's token first.");
  def_score<Lines>(c, "score", &Translator::score,
                   "log p(targets[i] | sources[i]) by teacher forcing; needs weights=\"plain\". A list of Score.");
  def_score<Ids>(c, "score_ids", &Translator::score_ids, "score, for token-id lists.");
}
}  // namespace

void bind_translator(py::module_& m) {
  py::class_<Translator> translator(m, "Translator", kTranslatorDoc);
  bind_construction(translator);
  bind_vocabulary_and_info(translator);
  bind_translate_and_score(translator);
}

}  // namespace transformer::python
