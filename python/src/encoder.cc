// The Encoder: loading a model's encoder (its keywords EncoderOptions') and embedding texts or token
// ids (their keywords EmbedOptions'), as NumPy arrays.
#include <pybind11/numpy.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "module.h"
#include "transformer/encoder.h"

namespace transformer::python {

namespace {

constexpr const char* kEncoderDoc = R"(A model's encoder and its vocabulary, loaded once, for embeddings.

Encoder(model_path, vocab=None, *, need_vocab=True, verify=True, weights="packed", threads=0, device="cpu")

An encoder-only model (BERT-like) reads bos + the text's tokens + eos; the encoder of an
encoder-decoder model reads the tokens + eos, as translation does. weights: "packed", "int8",
"plain" or "bf16", as Translator's. Calls release the GIL; several threads may use one Encoder.)";

std::unique_ptr<Encoder> load_encoder(const py::object& model_path, const py::object& vocab, bool need_vocab,
                                      bool verify, const std::string& weights, int threads, const std::string& device) {
  return load_with_warnings<Encoder>(model_path, load_options(vocab, need_vocab, verify, weights, threads, device));
}

// pooling and normalize None: the model's defaults (Encoder::resolve).
EmbedOptions embed_options(const Encoder& e, const std::optional<std::string>& pooling, std::optional<bool> normalize,
                           int64_t batch_size, int64_t max_input_tokens, int threads) {
  EmbedOptions o;
  if (pooling) o.pooling = parse_pooling(*pooling);
  o.normalize = normalize;
  o = e.resolve(o);
  o.batch_sentences = batch_size;
  o.max_input_tokens = max_input_tokens;
  o.threads = threads;
  return o;
}

// Pooled: one float32 array [N, D]; pooling "none": a list of [L_i, D] arrays.
py::object to_numpy(const std::vector<Embedding>& out, Pooling pooling, int64_t dim) {
  if (pooling == Pooling::kNone) {
    py::list list;
    for (const Embedding& e : out) {
      py::array_t<float> a({e.rows, e.dim});
      std::copy(e.values.begin(), e.values.end(), a.mutable_data());
      list.append(a);
    }
    return list;
  }
  py::array_t<float> a({static_cast<int64_t>(out.size()), dim});
  float* p = a.mutable_data();
  for (const Embedding& e : out) p = std::copy(e.values.begin(), e.values.end(), p);
  return a;
}

void bind_embed(py::class_<Encoder>& c) {
  const EmbedOptions d;
  c.def(
      "embed",
      [](const Encoder& e, const std::vector<std::string>& texts, const std::optional<std::string>& pooling,
         std::optional<bool> normalize,
         int64_t batch_size, int64_t max_input_tokens, int threads) {
        const EmbedOptions o = embed_options(e, pooling, normalize, batch_size, max_input_tokens, threads);
        std::vector<Embedding> out;
        {
          py::gil_scoped_release release;
          out = e.embed(texts, o);
        }
        return to_numpy(out, *o.pooling, e.dim());
      },
      py::arg("texts"), py::kw_only(), py::arg("pooling") = py::none(), py::arg("normalize") = py::none(),
      py::arg("batch_size") = d.batch_sentences, py::arg("max_input_tokens") = d.max_input_tokens,
      py::arg("threads") = d.threads,
      "Texts → a float32 array [N, D], one row per text in input order (pooling \"mean\", \"cls\", \"last\" or "
      "\"max\"), or with pooling=\"none\" a list of [L_i, D] arrays, every token's vector. normalize: unit L2 norms. "
      "pooling and normalize None: the model's defaults (a sentence-transformers import records its own; else "
      "\"mean\", not normalized).");
  c.def(
      "embed_ids",
      [](const Encoder& e, const std::vector<std::vector<int32_t>>& ids, const std::optional<std::string>& pooling,
         std::optional<bool> normalize,
         int64_t batch_size, int64_t max_input_tokens, int threads,
         const std::optional<std::vector<std::vector<int32_t>>>& token_types) {
        const EmbedOptions o = embed_options(e, pooling, normalize, batch_size, max_input_tokens, threads);
        const std::vector<std::vector<int32_t>> types = token_types.value_or(std::vector<std::vector<int32_t>>{});
        std::vector<Embedding> out;
        {
          py::gil_scoped_release release;
          out = e.embed_ids(ids, o, types);
        }
        return to_numpy(out, *o.pooling, e.dim());
      },
      py::arg("ids"), py::kw_only(), py::arg("pooling") = py::none(), py::arg("normalize") = py::none(),
      py::arg("batch_size") = d.batch_sentences, py::arg("max_input_tokens") = d.max_input_tokens,
      py::arg("threads") = d.threads, py::arg("token_types") = py::none(),
      "embed, for token-id lists taken exactly as given (no specials added); token_types: one list per input "
      "(default all 0).");
}

}  // namespace

void bind_encoder(py::module_& m) {
  py::class_<Encoder> c(m, "Encoder", kEncoderDoc);
  const EncoderOptions d;
  c.def(py::init(&load_encoder), py::arg("model_path"), py::arg("vocab") = py::none(), py::kw_only(),
        py::arg("need_vocab") = d.need_vocab, py::arg("verify") = d.verify, py::arg("weights") = "packed",
        py::arg("threads") = d.threads, py::arg("device") = d.device);
  bind_embed(c);
  c.def("encode", &Encoder::encode, py::arg("text"), "text → the token ids embed reads (specials added)")
      .def_property_readonly("dim", &Encoder::dim, "the length of each vector (d_model)")
      .def_property_readonly("architecture", &Encoder::architecture)
      .def_property_readonly("has_vocab", &Encoder::has_vocab)
      .def_property_readonly("model_path", &Encoder::model_path)
      .def_property_readonly("load_notes", &Encoder::load_notes)
      .def("__repr__", [](const Encoder& e) {
        return "Encoder(" + py::repr(py::str(e.model_path())).cast<std::string>() + ")";
      });
}

}  // namespace transformer::python
