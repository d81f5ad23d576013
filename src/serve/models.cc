// The models a server loaded, by name: loading each with the server's weight form (a decoder-only
// model as a generator), the scoring translator loaded on first use, and the lookup of a
// request's "model".
#include "serve/models.h"

#include "core/error.h"
#include "serve/http_error.h"
#include "transformer/model.h"

namespace tfm::serve {

using json = nlohmann::json;

// Generation: the refusals of an endpoint that needs another architecture ("an encoder-only
// model", "a decoder-only model").
static std::string a_model(const std::string& architecture) {
  return cat(architecture.rfind("e", 0) == 0 ? "an " : "a ", architecture, " model");
}

const transformer::Translator& LoadedModel::translation(const char* endpoint) const {
  if (!translator)
    throw HttpError{400, cat("model '", spec.name, "' is ", a_model(architecture), ": ", endpoint,
                             " needs an encoder-decoder (translation) model",
                             generator ? " (continue text with POST /v1/generate)"
                             : encoder ? " (embed text with POST /v1/embed)"
                                       : "")};
  return *translator;
}

const transformer::Generator& LoadedModel::generation(const char* endpoint) const {
  if (!generator)
    throw HttpError{400, cat("model '", spec.name, "' is ", a_model(architecture), ": ", endpoint,
                             " needs a decoder-only model (translate with POST /v1/translate)")};
  return *generator;
}

const transformer::Translator& LoadedModel::score_translator() {
  translation("/v1/score");
  if (options.weights == transformer::TranslatorOptions::Weights::kPlain ||
      options.weights == transformer::TranslatorOptions::Weights::kBf16)
    return *translator;  // scoring runs on these weights as they are
  std::lock_guard lock(scorer_mutex);
  if (!scorer) {
    transformer::TranslatorOptions o = options;
    o.weights = transformer::TranslatorOptions::Weights::kPlain;
    o.verify = false;  // verified when the server started
    scorer = std::make_unique<transformer::Translator>(spec.path, o);
  }
  return *scorer;
}

const transformer::Encoder& LoadedModel::embed_encoder() {
  std::lock_guard lock(encoder_mutex);
  if (!encoder) {
    if (architecture == "decoder-only")
      throw HttpError{400, cat("model '", spec.name, "' is a decoder-only model, which has no encoder to embed with")};
    transformer::EncoderOptions o = options;
    o.verify = false;  // verified when the server started
    encoder = std::make_unique<transformer::Encoder>(spec.path, o);
  }
  return *encoder;
}

namespace {

std::unique_ptr<LoadedModel> load(const ModelSpec& spec, const ServerOptions& options) {
  auto m = std::make_unique<LoadedModel>();
  m->spec = spec;
  m->options.vocab = spec.vocab;
  m->options.verify = options.verify;
  m->options.weights = options.weights;
  m->options.threads = options.threads_per_worker;
  try {
    const transformer::ModelInfo info = transformer::model_info(spec.path, false);
    json config = json::object();
    for (const auto& [k, v] : info.config) config[k] = json::parse(v);
    // A decoder-only model is loaded as a generator, an encoder-only one as an encoder, any other as
    // a translator.
    m->architecture = config.value("architecture", std::string("encoder-decoder"));
    if (m->architecture == "decoder-only")
      m->generator = std::make_unique<transformer::Generator>(spec.path, m->options);
    else if (m->architecture == "encoder-only")
      m->encoder = std::make_unique<transformer::Encoder>(spec.path, m->options);
    else
      m->translator = std::make_unique<transformer::Translator>(spec.path, m->options);
    m->info = {{"name", spec.name}, {"config", config}, {"parameters", info.total_parameters}};
    m->decoder_layers = info.decoder_layers;
    m->heads = config.value("heads", int64_t{1});
  } catch (const Error& e) {
    throw Error(cat("model '", spec.name, "': ", e.what()));
  }
  return m;
}

}  // namespace

Models::Models(const ServerOptions& options) {
  for (const ModelSpec& spec : options.models) models_.push_back(load(spec, options));
}

LoadedModel& Models::find(const std::string& name) {
  if (name.empty()) {
    if (models_.size() == 1) return *models_[0];
    throw HttpError{400, cat("this server has ", models_.size(), " models: name one in 'model' (", names(), ")")};
  }
  for (auto& m : models_)
    if (m->spec.name == name) return *m;
  throw HttpError{404, cat("unknown model '", name, "' (this server has: ", names(), ")")};
}

std::string Models::names() const {
  std::string out;
  for (const auto& m : models_) out += (out.empty() ? "" : ", ") + m->spec.name;
  return out;
}

json Models::info() const {
  json list = json::array();
  for (const auto& m : models_) list.push_back(m->info);
  return list;
}

std::vector<std::string> Models::load_messages() const {
  std::vector<std::string> out;
  for (const auto& m : models_) {
    const transformer::LoadNotes& notes = m->generator ? m->generator->load_notes()
                                          : m->translator ? m->translator->load_notes()
                                                          : m->encoder->load_notes();
    for (const std::string& n : notes.notes) out.push_back(cat("note: model '", m->spec.name, "': ", n));
    for (const std::string& w : notes.warnings)
      out.push_back(cat("warning: model '", m->spec.name, "': ", w));
  }
  return out;
}

}  // namespace tfm::serve
