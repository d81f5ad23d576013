// The Generator: loading a decoder-only model (its keywords TranslatorOptions', as Translator's) and
// continuing prompts (their keywords GenerationOptions', defaults included), with a per-token
// callback that generate_tokens (python/transformer/_streaming.py) turns into an iterator.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "module.h"
#include "transformer/generator.h"

namespace transformer::python {

namespace {

constexpr const char* kGeneratorDoc = R"(A decoder-only model and its vocabulary, loaded once.

Generator(model_path, vocab=None, *, need_vocab=True, verify=True, weights="packed", threads=0, device="cpu")

The keywords are Translator's (no shortlist: a language model has no source). A model of another
architecture raises Error naming it. Calls release the GIL; several threads may use one Generator
at once.)";

std::unique_ptr<Generator> load_generator(const py::object& model_path, const py::object& vocab, bool need_vocab,
                                          bool verify, const std::string& weights, int threads,
                                          const std::string& device) {
  return load_with_warnings<Generator>(model_path, load_options(vocab, need_vocab, verify, weights, threads, device));
}

void bind_construction_and_vocabulary(py::class_<Generator>& c) {
  const GeneratorOptions defaults;
  c.def(py::init(&load_generator), py::arg("model_path"), py::arg("vocab") = py::none(), py::kw_only(),
        py::arg("need_vocab") = defaults.need_vocab, py::arg("verify") = defaults.verify,
        py::arg("weights") = weights_name(defaults.weights), py::arg("threads") = defaults.threads,
        py::arg("device") = defaults.device)
      .def("encode", &Generator::encode, py::arg("text"), "text (str or bytes) → token ids, cleaned first")
      .def("decode", [](const Generator& g, const std::vector<int32_t>& ids) { return text_of(g.decode(ids)); },
           py::arg("ids"), "token ids → text")
      .def("parse_ids", &Generator::parse_ids, py::arg("line"), py::arg("line_number") = 1,
           "space-separated token ids, as `transformer generate --ids` reads them; errors name line_number")
      .def_property_readonly("has_vocab", &Generator::has_vocab)
      .def_property_readonly("vocab_size", &Generator::vocab_size)
      .def_property_readonly("bos_id", &Generator::bos_id, "the beginning of sequence a text prompt starts with")
      .def_property_readonly("load_notes", &Generator::load_notes, "the loader's notes and warnings")
      .def("__repr__", [](const Generator& g) { return "Generator(vocab_size=" + std::to_string(g.vocab_size()) + ")"; });
}

template <class Prompts>
using GenerateMethod = std::vector<Generation> (Generator::*)(const Prompts&, const GenerationOptions&,
                                                              const TokenCallback&) const;

// generate or generate_ids: its keywords are GenerationOptions' fields (the search's as translate
// names them) and on_token, called with (prompt index, token id) as each token is generated.
template <class Prompts>
void def_generate(py::class_<Generator>& c, const char* name, GenerateMethod<Prompts> method, const char* doc) {
  const GenerationOptions defaults;
  const SearchOptions& search = defaults.search;
  c.def(
      name,
      [method](const Generator& g, const Prompts& prompts, int64_t max_new_tokens, int64_t min_new_tokens,
               bool include_prompt, int64_t beam, int64_t n_best, double length_penalty, int64_t sampling_topk,
               double sampling_topp, double sampling_temperature, uint64_t seed, bool return_scores,
               int64_t batch_size, int64_t max_input_tokens, const std::optional<py::function>& on_token) {
        GenerationOptions o;
        o.max_new_tokens = max_new_tokens;
        o.min_new_tokens = min_new_tokens;
        o.include_prompt = include_prompt;
        o.search.beam_size = beam;
        o.search.n_best = n_best;
        o.search.length_penalty = length_penalty;
        o.search.sampling_topk = sampling_topk;
        o.search.sampling_topp = sampling_topp;
        o.search.sampling_temperature = sampling_temperature;
        o.search.seed = seed;
        o.search.return_scores = return_scores;
        o.batch_sentences = batch_size;
        o.max_input_tokens = max_input_tokens;
        TokenCallback report;  // called without the GIL: takes it for the Python callable
        if (on_token)
          report = [&f = *on_token](int64_t i, int32_t id) {
            py::gil_scoped_acquire gil;
            f(i, id);
          };
        py::gil_scoped_release release;
        return (g.*method)(prompts, o, report);
      },
      py::arg("prompts"), py::kw_only(), py::arg("max_new_tokens") = defaults.max_new_tokens,
      py::arg("min_new_tokens") = defaults.min_new_tokens, py::arg("include_prompt") = defaults.include_prompt,
      py::arg("beam") = search.beam_size, py::arg("n_best") = search.n_best,
      py::arg("length_penalty") = search.length_penalty, py::arg("sampling_topk") = search.sampling_topk,
      py::arg("sampling_topp") = search.sampling_topp, py::arg("sampling_temperature") = search.sampling_temperature,
      py::arg("seed") = search.seed, py::arg("return_scores") = search.return_scores,
      py::arg("batch_size") = defaults.batch_sentences, py::arg("max_input_tokens") = defaults.max_input_tokens,
      py::arg("on_token") = py::none(), doc);
}

}  // namespace

void bind_generator(py::module_& m) {
  py::class_<Generator> c(m, "Generator", kGeneratorDoc);
  bind_construction_and_vocabulary(c);
  def_generate<std::vector<std::string>>(
      c, "generate", &Generator::generate_batch,
      "Prompts (text) → a list of Generation, in input order: each prompt cleaned, encoded and fed after BOS (\"\": "
      "BOS alone), continued by greedy search (beam=1), beam search, or sampling (sampling_topk, sampling_topp, "
      "sampling_temperature, seed). on_token(prompt index, token id) is called as each token is generated (beam=1 "
      "only).");
  def_generate<std::vector<std::vector<int32_t>>>(
      c, "generate_ids", &Generator::generate_batch_ids,
      "generate, for token-id prompts fed exactly as given (nothing added; [] is BOS alone): hypotheses with ids "
      "only (text \"\").");
}

}  // namespace transformer::python
