// POST /v1/generate: a decoder-only model continues the request's prompts, answered as one JSON
// body, or with "stream": true as server-sent events (one per token as it is generated, then one
// with the whole answer).
#include <memory>

#include "core/error.h"
#include "serve/generate_job.h"
#include "serve/generate_request.h"
#include "serve/http_error.h"
#include "serve/server_impl.h"

namespace tfm::serve {

using json = nlohmann::json;

namespace {

// One request: its model, options and prompts, and the job generating them.
struct GenerateCall {
  std::string model;
  const transformer::Generator* generator = nullptr;
  GenerateRequest request;
  GenerateInputs inputs;
  std::shared_ptr<GenerateJob> job;

  // The whole answer, once the job is done; counts its prompts and tokens in the metrics.
  json answer(Metrics& metrics) const {
    json out = json::array();
    int64_t prompt_tokens = 0, new_tokens = 0;
    for (size_t i = 0; i < job->results.size(); ++i) {
      const transformer::Generation& r = job->results[i];
      prompt_tokens += static_cast<int64_t>(r.prompt_ids.size());
      new_tokens += static_cast<int64_t>(r.best().ids.size() - (request.options.include_prompt ? r.prompt_ids.size() : 0));
      out.push_back(generation_json(*generator, r, request.options, inputs.warnings[i]));
    }
    metrics.sentences(model, "generate", static_cast<int64_t>(out.size()), prompt_tokens, new_tokens);
    return {{"model", model}, {"generations", std::move(out)}};
  }
};

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

bool send_event(httplib::DataSink& sink, const json& data) {
  const std::string event = "data: " + dump(data) + "\n\n";
  return sink.write(event.data(), event.size());
}

// Sends a streamed request's events: each token as it comes, {"index", "id", "text"} (the text it
// adds to its prompt's continuation, "" while a piece's text depends on the next one), then the
// whole answer, or {"error"} when the decoding failed; then ends the stream. False: the client left.
bool send_events(const GenerateCall& call, Metrics& metrics, httplib::DataSink& sink) {
  const size_t n = call.inputs.prompts.size();
  std::vector<std::vector<int32_t>> tokens(n);
  std::vector<std::string> shown(n);
  std::vector<GenerateJob::Token> batch;
  json last;
  try {
    for (bool done = false; !done;) {
      done = call.job->next_tokens(batch);
      for (const GenerateJob::Token& t : batch) {
        tokens[t.prompt].push_back(t.id);
        std::string text = call.generator->decode(tokens[t.prompt]);
        std::string added;
        if (text.compare(0, shown[t.prompt].size(), shown[t.prompt]) == 0) {
          added = text.substr(shown[t.prompt].size());
          shown[t.prompt] = std::move(text);
        }
        if (!send_event(sink, {{"index", t.prompt}, {"id", t.id}, {"text", added}})) return false;
      }
    }
    last = call.answer(metrics);
  } catch (const std::exception& e) {
    last = {{"error", e.what()}};
  }
  if (!send_event(sink, last)) return false;
  sink.done();
  return true;
}

}  // namespace

void Server::Impl::generate(const httplib::Request& req, httplib::Response& res) {
  if (!authorized(req)) return unauthorized(res);
  auto call = std::make_shared<GenerateCall>();
  const bool queued = guarded(res, [&] {
    const Fields f = generate_fields(req.body);
    const LoadedModel& m = models.find(f.string("model"));
    call->model = m.spec.name;
    call->generator = &m.generation("/v1/generate");
    const std::vector<std::string> prompts = f.texts("prompts", options.max_sentences);
    call->request = generate_request(f, options);
    const nlohmann::json& config = m.info["config"];
    const int64_t positions = config.value("max_positions", int64_t{0}) > 0
                                  ? config.value("max_positions", int64_t{0}) - config.value("position_offset", int64_t{0})
                                  : 0;
    call->inputs = generate_inputs(*call->generator, prompts, call->request.options, options, positions);
    call->job = std::make_shared<GenerateJob>(generate_key(m.spec.name, call->request.options), call->inputs.costs,
                                              *call->generator, call->request.options, call->inputs.prompts,
                                              call->request.stream);
    if (call->request.stream) return enqueue(call->job);
    submit(call->job);
    res.set_content(dump(call->answer(metrics)) + "\n", "application/json");
    res.status = 200;
  });
  if (!queued || !call->request.stream) return;
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [this, call](size_t, httplib::DataSink& sink) {
    return send_events(*call, metrics, sink);
  });
}

}  // namespace tfm::serve
