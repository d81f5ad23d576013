// The work of the JSON endpoints: /v1/translate, /v1/score and /v1/embed read their request, queue
// its sentences in the batcher and answer with their results; /v1/models and /health describe the server.
#include "core/error.h"
#include "serve/http_error.h"
#include "serve/jobs.h"
#include "serve/request.h"
#include "serve/responses.h"
#include "serve/server_impl.h"

namespace tfm::serve {

using json = nlohmann::json;

void Server::Impl::submit(const std::shared_ptr<Job>& job) {
  enqueue(job);
  job->wait();  // decoding errors (e.g. the memory limit) are thrown here: 500
}

void Server::Impl::enqueue(const std::shared_ptr<Job>& job) {
  if (!batcher->submit(job))
    throw HttpError{503, cat("the server is busy: its queue holds ", batcher->queued(), " of ",
                             options.batching.max_queue_sentences, " sentences and this request has ", job->size(),
                             "; retry later")};
}

json Server::Impl::translate(const httplib::Request& req) {
  const Fields f(req.body, {"text", "model", "beam", "n_best", "length_penalty", "scores", "attention", "source_lang",
                         "target_lang"});
  LoadedModel& m = models.find(f.string("model"));
  const transformer::Translator& translator = m.translation("/v1/translate");
  const std::vector<std::string> texts = f.texts("text", options.max_sentences);
  const TranslateRequest request = translate_request(f, options);
  TranslateInputs in = translate_inputs(m, texts, request.options, options);
  transformer::TranslateOptions job_options = request.options;
  job_options.languages.source.clear();  // the sources hold its token: ids are translated as given
  auto job = std::make_shared<TranslateJob>(translate_key(m.spec.name, request.options), std::move(in.costs),
                                            translator, job_options, std::move(in.sources));
  submit(job);
  json out = json::array();
  int64_t source_tokens = 0, target_tokens = 0;
  for (size_t i = 0; i < job->results.size(); ++i) {
    const transformer::Translation& r = job->results[i];
    source_tokens += static_cast<int64_t>(r.source_ids.size()) + 1;
    target_tokens += static_cast<int64_t>(r.best().ids.size()) + 1;
    out.push_back(translation_json(translator, r, request, in.warnings[i]));
  }
  metrics.sentences(m.spec.name, "translate", static_cast<int64_t>(texts.size()), source_tokens, target_tokens);
  return {{"model", m.spec.name}, {"translations", std::move(out)}};
}

json Server::Impl::score(const httplib::Request& req) {
  const Fields f(req.body, {"source", "target", "model"});
  LoadedModel& m = models.find(f.string("model"));
  m.translation("/v1/score");  // generation: a decoder-only model is refused, naming it
  ScoreInputs in = score_inputs(m, f, options);
  const transformer::Translator& scorer = m.score_translator();
  auto job = std::make_shared<ScoreJob>(score_key(m.spec.name), std::move(in.costs), scorer, options.max_input_tokens,
                                        std::move(in.sources), std::move(in.targets));
  submit(job);
  json out = json::array();
  int64_t source_tokens = 0, target_tokens = 0;
  for (size_t i = 0; i < job->results.size(); ++i) {
    const transformer::Score& s = job->results[i];
    source_tokens += static_cast<int64_t>(job->sources[i].size()) + 1;
    target_tokens += s.tokens;
    out.push_back(score_json(s, in.warnings[i]));
  }
  metrics.sentences(m.spec.name, "score", static_cast<int64_t>(job->results.size()), source_tokens, target_tokens);
  return {{"model", m.spec.name}, {"scores", std::move(out)}};
}

json Server::Impl::embed(const httplib::Request& req) {
  const Fields f(req.body, {"texts", "model", "pooling", "normalize"});
  LoadedModel& m = models.find(f.string("model"));
  const std::vector<std::string> texts = f.texts("texts", options.max_sentences);
  const transformer::Encoder& encoder = m.embed_encoder();
  transformer::EmbedOptions o;
  try {
    if (f.has("pooling")) o.pooling = transformer::parse_pooling(f.string("pooling"));
  } catch (const transformer::Error& e) {
    throw HttpError{400, cat("'pooling': ", e.what())};
  }
  if (f.has("normalize")) o.normalize = f.boolean("normalize", false);
  o = encoder.resolve(o);  // absent pooling and normalize: the model's defaults
  o.max_input_tokens = options.max_input_tokens;
  o.threads = options.threads_per_worker;
  EmbedInputs in = embed_inputs(encoder, texts, options);
  auto job = std::make_shared<EmbedJob>(embed_key(m.spec.name, o), std::move(in.costs), encoder, o, std::move(in.ids));
  submit(job);
  json out = json::array();
  int64_t tokens = 0;
  for (const transformer::Embedding& e : job->results) {
    tokens += static_cast<int64_t>(e.ids.size());
    out.push_back(embedding_json(e, o.pooling == transformer::Pooling::kNone));
  }
  metrics.sentences(m.spec.name, "embed", static_cast<int64_t>(texts.size()), tokens, 0);
  json answer = {{"model", m.spec.name}, {"embeddings", std::move(out)}};
  if (in.any_warning) answer["warnings"] = in.warnings;
  return answer;
}

json Server::Impl::list_models() const { return json{{"models", models.info()}}; }

json Server::Impl::health() const {
  return json{{"status", "ok"}, {"models", models.size()}, {"queue", batcher->queued()}};
}

}  // namespace tfm::serve
