#include "serve/server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <strings.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "serve/assets.h"
#include "serve/metrics.h"
#include "transformer/model.h"
#include "transformer/text.h"

namespace tfm::serve {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

ModelSpec parse_model_spec(const std::string& text) {
  ModelSpec spec;
  const size_t eq = text.find('=');
  if (eq == std::string::npos) {
    spec.path = text;
    spec.name = std::filesystem::path(text).stem().string();
  } else {
    spec.name = text.substr(0, eq);
    spec.path = text.substr(eq + 1);
  }
  TFM_CHECK(!spec.path.empty(), "-m '", text, "' names no model file (give PATH or NAME=PATH)");
  TFM_CHECK(!spec.name.empty() && std::all_of(spec.name.begin(), spec.name.end(),
                                               [](char c) {
                                                 return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
                                                        c == '_' || c == '.';
                                               }),
            "-m '", text, "': a model's name must be letters, digits, '-', '_' or '.', got '", spec.name, "'");
  return spec;
}

void ServerOptions::validate() const {
  TFM_CHECK(!models.empty(), "serve needs at least one model (-m PATH or -m NAME=PATH)");
  for (size_t i = 0; i < models.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      TFM_CHECK(models[i].name != models[j].name, "two models are named '", models[i].name,
                "': name them apart with -m NAME=PATH");
  TFM_CHECK(port >= 0 && port <= 65535, "--port must be in [0, 65535] (0: any free port), got ", port);
  batching.validate();
  TFM_CHECK(threads_per_worker >= 1 && threads_per_worker <= 1024, "--threads must be in [1, 1024], got ",
            threads_per_worker);
  TFM_CHECK(http_threads >= 1 && http_threads <= 4096, "--http-threads must be in [1, 4096], got ", http_threads);
  TFM_CHECK(max_body_bytes >= 64, "--max-body-bytes must be >= 64, got ", max_body_bytes);
  TFM_CHECK(max_sentences >= 1, "--max-sentences must be >= 1, got ", max_sentences);
  TFM_CHECK(max_sentences <= batching.max_queue_sentences, "--max-sentences ", max_sentences,
            " is more than --queue-size ", batching.max_queue_sentences, ": such a request could never be queued");
  TFM_CHECK(max_text_length >= 1, "--max-text-length must be >= 1, got ", max_text_length);
  TFM_CHECK(max_beam >= 1 && max_beam <= transformer::kMaxBeamSize, "--max-beam must be in [1, ",
            transformer::kMaxBeamSize, "], got ", max_beam);
  TFM_CHECK(max_attention_values >= 1, "--max-attention-values must be >= 1, got ", max_attention_values);
  TFM_CHECK(max_input_tokens >= 1 && max_input_tokens <= transformer::kMaxInputTokens,
            "--max-input-tokens must be in [1, ", transformer::kMaxInputTokens, "], got ", max_input_tokens);
  TFM_CHECK(std::isfinite(retry_after_seconds) && retry_after_seconds >= 0, "Retry-After must be >= 0, got ",
            retry_after_seconds);
}

std::string read_api_key(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TFM_CHECK(in && !std::filesystem::is_directory(path), "cannot read --api-key-file '", path, "'");
  std::string key;
  std::getline(in, key);
  const transformer::CleanText clean = transformer::clean_input(key);
  TFM_CHECK(!clean.text.empty(), "--api-key-file '", path, "' holds no key (its first line is empty)");
  TFM_CHECK(!clean.repairs.any(), "--api-key-file '", path, "': the key is not plain UTF-8 text");
  return clean.text;
}

namespace {

// An error the client caused (or a full queue): the status and the message of the JSON body.
struct HttpError {
  int status;
  std::string message;
};

// Replaces bytes that are not UTF-8 (a parse error quotes the bad input) rather than throw.
std::string error_body(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

// A model and its translators: the decoding one, and one with the plain float32 weights for
// scoring (which needs them), loaded on the first /v1/score request.
struct LoadedModel {
  ModelSpec spec;
  transformer::TranslatorOptions options;
  std::unique_ptr<transformer::Translator> translator;
  std::mutex scorer_mutex;
  std::unique_ptr<transformer::Translator> scorer;
  json info;
  int64_t decoder_layers = 0, heads = 0;

  const transformer::Translator& score_translator() {
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
};

// One /v1/translate request's sentences.
class TranslateJob : public Job {
 public:
  TranslateJob(std::string key, std::vector<int64_t> costs, const transformer::Translator& t,
               transformer::TranslateOptions o, std::vector<std::vector<int32_t>> sources)
      : Job(std::move(key), std::move(costs)), translator(t), options(o), sources(std::move(sources)),
        results(this->sources.size()) {}

  void run_batch(const std::vector<Item>& items) override {
    std::vector<std::vector<int32_t>> batch;
    batch.reserve(items.size());
    for (const Item& item : items) batch.push_back(static_cast<TranslateJob&>(*item.job).sources[item.index]);
    transformer::TranslateOptions o = options;
    o.batch_sentences = static_cast<int64_t>(batch.size());
    o.parallel_batches = 1;
    std::vector<transformer::Translation> out = translator.translate_ids(batch, o);
    for (size_t i = 0; i < items.size(); ++i)
      static_cast<TranslateJob&>(*items[i].job).results[items[i].index] = std::move(out[i]);
  }

  const transformer::Translator& translator;
  const transformer::TranslateOptions options;
  const std::vector<std::vector<int32_t>> sources;
  std::vector<transformer::Translation> results;
};

// One /v1/score request's sentence pairs.
class ScoreJob : public Job {
 public:
  ScoreJob(std::string key, std::vector<int64_t> costs, const transformer::Translator& t, int64_t max_input_tokens,
           std::vector<std::vector<int32_t>> sources, std::vector<std::vector<int32_t>> targets)
      : Job(std::move(key), std::move(costs)), scorer(t), max_input_tokens(max_input_tokens),
        sources(std::move(sources)), targets(std::move(targets)), results(this->sources.size()) {}

  void run_batch(const std::vector<Item>& items) override {
    std::vector<std::vector<int32_t>> src, tgt;
    for (const Item& item : items) {
      const auto& job = static_cast<ScoreJob&>(*item.job);
      src.push_back(job.sources[item.index]);
      tgt.push_back(job.targets[item.index]);
    }
    transformer::ScoreOptions o;
    o.batch_sentences = static_cast<int64_t>(src.size());
    o.max_input_tokens = max_input_tokens;
    std::vector<transformer::Score> out = scorer.score_ids(src, tgt, o);
    for (size_t i = 0; i < items.size(); ++i)
      static_cast<ScoreJob&>(*items[i].job).results[items[i].index] = out[i];
  }

  const transformer::Translator& scorer;
  const int64_t max_input_tokens;
  const std::vector<std::vector<int32_t>> sources, targets;
  std::vector<transformer::Score> results;
};

// The request body's fields, checked by type and range; every error names the field and value.
class Fields {
 public:
  Fields(const httplib::Request& req, std::initializer_list<const char*> known) {
    // No request needs nesting deeper than 3; deeper is refused while parsing (a body of 100,000
    // '[' inside a field once crashed the error message's dump() by recursion).
    static constexpr int kMaxDepth = 16;
    try {
      body_ = json::parse(req.body, [](int depth, json::parse_event_t, json&) {
        if (depth > kMaxDepth) throw HttpError{400, cat("the request body nests deeper than ", kMaxDepth, " levels")};
        return true;
      });
    } catch (const json::exception& e) {  // parse errors, and numbers out of range (1e400)
      throw HttpError{400, cat("the request body is not valid JSON: ", e.what())};
    }
    if (!body_.is_object())
      throw HttpError{400, cat("the request body must be a JSON object, got ", body_.type_name())};
    for (const auto& [name, value] : body_.items())
      if (std::find_if(known.begin(), known.end(), [&](const char* k) { return name == k; }) == known.end()) {
        std::string list;
        for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        throw HttpError{400, cat("unknown field '", name.size() > 80 ? name.substr(0, 77) + "..." : name, "' (known: ", list, ")")};
      }
  }
  bool has(const char* name) const { return body_.contains(name); }  // null is a wrong type, not absence
  // A value for an error message: a scalar as JSON (cut at 80 bytes), a container by its type.
  static std::string describe(const json& v) {
    if (v.is_structured()) return v.type_name();
    std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
    return text.size() > 80 ? text.substr(0, 77) + "..." : text;
  }
  int64_t integer(const char* name, int64_t fallback, int64_t lo, int64_t hi, const char* why = "") const {
    if (!has(name)) return fallback;
    const json& v = body_[name];
    if (!v.is_number_integer())
      throw HttpError{400, cat("'", name, "' must be an integer, got ", describe(v))};
    const auto n = v.get<int64_t>();
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) 
      throw HttpError{400, cat("'", name, "' must be in [", lo, ", ", hi, "]", why, ", got ", describe(v))};
    if (n < lo || n > hi) throw HttpError{400, cat("'", name, "' must be in [", lo, ", ", hi, "]", why, ", got ", n)};
    return n;
  }
  double number(const char* name, double fallback, double lo, double hi) const {
    if (!has(name)) return fallback;
    const json& v = body_[name];
    if (!v.is_number()) throw HttpError{400, cat("'", name, "' must be a number, got ", describe(v))};
    const auto x = v.get<double>();
    if (!(x >= lo && x <= hi)) throw HttpError{400, cat("'", name, "' must be in [", lo, ", ", hi, "], got ", x)};
    return x;
  }
  bool boolean(const char* name, bool fallback) const {
    if (!has(name)) return fallback;
    const json& v = body_[name];
    if (!v.is_boolean()) throw HttpError{400, cat("'", name, "' must be true or false, got ", describe(v))};
    return v.get<bool>();
  }
  std::string string(const char* name) const {
    if (!has(name)) return "";
    const json& v = body_[name];
    if (!v.is_string()) throw HttpError{400, cat("'", name, "' must be a string, got ", describe(v))};
    return v.get<std::string>();
  }
  // A required list of texts (a single string counts as a list of one).
  std::vector<std::string> texts(const char* name, int64_t max_sentences) const {
    if (!has(name)) throw HttpError{400, cat("the field '", name, "' is missing: give a list of texts")};
    const json& v = body_[name];
    if (v.is_string()) return {v.get<std::string>()};
    if (!v.is_array())
      throw HttpError{400, cat("'", name, "' must be a string or a list of strings, got ", v.type_name())};
    if (v.empty()) throw HttpError{400, cat("'", name, "' is an empty list: give at least one text")};
    if (static_cast<int64_t>(v.size()) > max_sentences)
      throw HttpError{400, cat("'", name, "' has ", v.size(), " texts, more than the limit of ", max_sentences,
                               " per request (--max-sentences): send them in several requests")};
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string())
        throw HttpError{400, cat("'", name, "[", i, "]' must be a string, got ", v[i].type_name())};
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }

 private:
  json body_;
};

std::vector<std::string> tokens_of(const transformer::Translator& t, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  out.reserve(ids.size() + 1);
  for (int32_t id : ids) out.push_back(t.piece(id));
  out.push_back("</s>");
  return out;
}

// Hypothesis attention [layer][head][target][source] as nested JSON arrays, rounded to 5 decimals.
json attention_json(const transformer::Attention& a) {
  json layers = json::array();
  for (int64_t l = 0; l < a.layers; ++l) {
    json heads = json::array();
    for (int64_t h = 0; h < a.heads; ++h) {
      json rows = json::array();
      for (int64_t t = 0; t < a.target_length; ++t) {
        json row = json::array();
        for (int64_t s = 0; s < a.source_length; ++s) row.push_back(std::round(a.at(l, h, t, s) * 1e5) / 1e5);
        rows.push_back(std::move(row));
      }
      heads.push_back(std::move(rows));
    }
    layers.push_back(std::move(heads));
  }
  return layers;
}

const char* const kEndpoints[] = {"/",       "/health",       "/metrics",   "/openapi.json",
                                  "/v1/models", "/v1/translate", "/v1/score"};

// The one method an endpoint takes: POST for the JSON work endpoints, GET for the rest.
const char* method_of(std::string_view endpoint) {
  return endpoint == "/v1/translate" || endpoint == "/v1/score" ? "POST" : "GET";
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  std::vector<std::unique_ptr<LoadedModel>> models;
  Metrics metrics;
  std::unique_ptr<Batcher> batcher;
  httplib::Server http;
  std::string openapi;  // the OpenAPI document with this server's limits
  int port = -1;
  socket_t listen_socket = INVALID_SOCKET;
  std::atomic<bool> stopping{false};

  LoadedModel& model(const Fields& f) {
    const std::string name = f.string("model");
    if (name.empty()) {
      if (models.size() == 1) return *models[0];
      throw HttpError{400, cat("this server has ", models.size(), " models: name one in 'model' (", names(), ")")};
    }
    for (auto& m : models)
      if (m->spec.name == name) return *m;
    throw HttpError{404, cat("unknown model '", name, "' (this server has: ", names(), ")")};
  }
  std::string names() const {
    std::string out;
    for (const auto& m : models) out += (out.empty() ? "" : ", ") + m->spec.name;
    return out;
  }

  // A text checked (not over the limit, in characters as the OpenAPI document's maxLength counts
  // them, before cleaning) and cleaned (transformer/text.h): not empty once trimmed, unless `may_be_empty`.
  std::string clean(const std::string& text, const std::string& what, std::vector<std::string>& warnings,
                    bool may_be_empty = false) const {
    const auto characters = std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; });
    if (characters > options.max_text_length)
      throw HttpError{400, cat(what, " has ", characters, " characters, more than the limit of ",
                               options.max_text_length, " (--max-text-length)")};
    transformer::CleanText c = transformer::clean_input(text);
    for (const std::string& w : transformer::repair_warnings(c.repairs, what)) warnings.push_back(w);
    if (c.text.empty() && !may_be_empty)
      throw HttpError{400, cat(what, " is empty (nothing to translate once trimmed)")};
    return std::move(c.text);
  }

  // A text cleaned, checked and encoded; one the vocabulary turns into no tokens at all (only
  // zero-width or ideographic spaces, say) is refused like an empty one. A target to score may be
  // empty, as with `transformer score`: its score is the end of sentence's.
  std::vector<int32_t> encode(const LoadedModel& m, const std::string& text, const std::string& what,
                              std::vector<std::string>& warnings, bool may_be_empty = false) const {
    std::vector<int32_t> ids = m.translator->encode(clean(text, what, warnings, may_be_empty));
    if (ids.empty() && !may_be_empty)
      throw HttpError{400, cat(what, " has no tokens: the vocabulary drops every character of it")};
    return ids;
  }

  void submit(const std::shared_ptr<Job>& job) {
    if (!batcher->submit(job))
      throw HttpError{503, cat("the server is busy: its queue holds ", batcher->queued(), " of ",
                               options.batching.max_queue_sentences, " sentences and this request has ", job->size(),
                               "; retry later")};
    job->wait();  // decoding errors (e.g. the memory limit) are thrown here: 500
  }

  json translate(const httplib::Request& req) {
    const Fields f(req, {"text", "model", "beam", "n_best", "length_penalty", "scores", "attention"});
    LoadedModel& m = model(f);
    const std::vector<std::string> texts = f.texts("text", options.max_sentences);
    transformer::TranslateOptions o;
    // n_best without a beam widens the default beam to it; with one, it may not be more.
    const int64_t n_best = f.integer("n_best", 1, 1, options.max_beam, " (--max-beam)");
    o.search.beam_size = f.integer("beam", std::max<int64_t>(std::min<int64_t>(4, options.max_beam), n_best), 1,
                                   options.max_beam, " (--max-beam)");
    o.search.n_best = f.integer("n_best", 1, 1, o.search.beam_size, " (at most the beam)");
    o.search.length_penalty = f.number("length_penalty", 0.6, 0, 10);
    o.search.record_attention = f.boolean("attention", false);
    o.max_input_tokens = options.max_input_tokens;
    const bool scores = f.boolean("scores", false);
    // Computed only where returned: greedy search is faster without (SearchOptions::return_scores).
    o.search.return_scores = scores || o.search.n_best > 1 || o.search.record_attention;
    std::vector<std::vector<std::string>> warnings(texts.size());
    std::vector<std::vector<int32_t>> sources;
    std::vector<int64_t> costs;
    int64_t attention_values = 0;  // at most, were every output as long as allowed
    for (size_t i = 0; i < texts.size(); ++i) {
      sources.push_back(encode(m, texts[i], cat("text[", i, "]"), warnings[i]));
      const int64_t length = std::min<int64_t>(static_cast<int64_t>(sources.back().size()), options.max_input_tokens);
      costs.push_back(length + 1);
      const auto max_output = static_cast<int64_t>(o.search.max_length_a * static_cast<double>(length) + o.search.max_length_b);
      attention_values += o.search.n_best * m.decoder_layers * m.heads * (length + 1) * (max_output + 1);
    }
    if (o.search.record_attention && attention_values > options.max_attention_values)
      throw HttpError{400, cat("the attention of this request could be ", attention_values,
                               " weights (texts × n_best × layers × heads × source × output tokens), more than the limit of ",
                               options.max_attention_values,
                               " (--max-attention-values): ask for attention with fewer or shorter texts, or a smaller n_best")};
    // Requests share batches only with equal options: the length penalty by its exact bits (printed
    // with 6 digits, 0.1234561 and 0.1234564 were one key and decoded alike).
    uint64_t penalty_bits = 0;
    std::memcpy(&penalty_bits, &o.search.length_penalty, sizeof penalty_bits);
    const std::string key = cat(m.spec.name, "\ttranslate\t", o.search.beam_size, "\t", o.search.n_best, "\t",
                                penalty_bits, "\t", o.search.record_attention, "\t", o.search.return_scores);
    auto job = std::make_shared<TranslateJob>(key, costs, *m.translator, o, std::move(sources));
    submit(job);
    json out = json::array();
    int64_t source_tokens = 0, target_tokens = 0;
    for (size_t i = 0; i < job->results.size(); ++i) {
      const transformer::Translation& r = job->results[i];
      const transformer::Hypothesis& best = r.best();
      source_tokens += static_cast<int64_t>(r.source_ids.size()) + 1;
      target_tokens += static_cast<int64_t>(best.ids.size()) + 1;
      json t = {{"text", m.translator->decode(best.ids)}};  // translate_ids gives ids only
      if (scores) t["score"] = best.normalized;
      if (r.truncated) t["truncated"] = true;
      if (!warnings[i].empty()) t["warnings"] = warnings[i];
      if (o.search.n_best > 1 || o.search.record_attention) {
        json hyps = json::array();
        for (const transformer::Hypothesis& h : r.hypotheses) {
          json hj = {{"text", m.translator->decode(h.ids)}, {"score", h.normalized}};
          if (o.search.record_attention) {
            hj["target_tokens"] = tokens_of(*m.translator, h.ids);
            hj["attention"] = attention_json(h.attention);
          }
          hyps.push_back(std::move(hj));
        }
        t["hypotheses"] = std::move(hyps);
      }
      if (o.search.record_attention) t["source_tokens"] = tokens_of(*m.translator, r.source_ids);
      out.push_back(std::move(t));
    }
    metrics.sentences(m.spec.name, "translate", static_cast<int64_t>(texts.size()), source_tokens, target_tokens);
    return {{"model", m.spec.name}, {"translations", std::move(out)}};
  }

  json score(const httplib::Request& req) {
    const Fields f(req, {"source", "target", "model"});
    LoadedModel& m = model(f);
    const std::vector<std::string> src_texts = f.texts("source", options.max_sentences);
    const std::vector<std::string> tgt_texts = f.texts("target", options.max_sentences);
    if (src_texts.size() != tgt_texts.size())
      throw HttpError{400, cat("'source' has ", src_texts.size(), " texts but 'target' has ", tgt_texts.size(),
                               ": give one target per source")};
    std::vector<std::vector<int32_t>> src, tgt;
    std::vector<int64_t> costs;
    std::vector<std::vector<std::string>> warnings(src_texts.size());
    for (size_t i = 0; i < src_texts.size(); ++i) {
      src.push_back(encode(m, src_texts[i], cat("source[", i, "]"), warnings[i]));
      tgt.push_back(encode(m, tgt_texts[i], cat("target[", i, "]"), warnings[i], true));
      costs.push_back(std::min<int64_t>(static_cast<int64_t>(src.back().size()), options.max_input_tokens) +
                      std::min<int64_t>(static_cast<int64_t>(tgt.back().size()), options.max_input_tokens) + 2);
    }
    const transformer::Translator& scorer = m.score_translator();
    auto job = std::make_shared<ScoreJob>(cat(m.spec.name, "\tscore"), costs, scorer, options.max_input_tokens,
                                          std::move(src), std::move(tgt));
    submit(job);
    json out = json::array();
    int64_t source_tokens = 0, target_tokens = 0;
    for (size_t i = 0; i < job->results.size(); ++i) {
      const transformer::Score& s = job->results[i];
      json j = {{"score", s.total}, {"per_token", s.per_token}, {"tokens", s.tokens}};
      if (s.truncated) j["truncated"] = true;
      if (!warnings[i].empty()) j["warnings"] = warnings[i];
      source_tokens += static_cast<int64_t>(job->sources[i].size()) + 1;
      target_tokens += s.tokens;
      out.push_back(std::move(j));
    }
    metrics.sentences(m.spec.name, "score", static_cast<int64_t>(src_texts.size()), source_tokens, target_tokens);
    return {{"model", m.spec.name}, {"scores", std::move(out)}};
  }

  // Runs a JSON endpoint: errors become their status and a JSON body. `req` given: the endpoint
  // needs the API key (checked here, in the handler, once httplib has read the body: answered
  // before that, the unread body would be read as the connection's next request).
  void answer(httplib::Response& res, const std::function<json()>& body, const httplib::Request* req = nullptr) {
    if (req && !authorized(*req)) {
      unauthorized(res);
      return;
    }
    try {
      res.set_content(body().dump() + "\n", "application/json");
      res.status = 200;
    } catch (const HttpError& e) {
      res.status = e.status;
      if (e.status == 503) res.set_header("Retry-After", cat(std::ceil(options.retry_after_seconds)));
      res.set_content(error_body(e.message), "application/json");
    } catch (const std::bad_alloc&) {
      res.status = 503;
      res.set_content(error_body("the server ran out of memory for this request; retry later or send less"),
                      "application/json");
    } catch (const std::exception& e) {
      res.status = 500;
      res.set_content(error_body(e.what()), "application/json");
    }
  }

  // Reads a request's body to its end into `receive`; multipart form data through the two-callback
  // reader (the one-callback reader would call an empty multipart callback: a 500).
  static bool read_all(const httplib::Request& req, const httplib::ContentReader& reader,
                       const httplib::ContentReceiver& receive) {
    if (req.is_multipart_form_data()) return reader([](const httplib::MultipartFormData&) { return true; }, receive);
    return reader(receive);
  }

  // The request with its body, read (and decompressed) up to --max-body-bytes; nullopt with the
  // error answered when it cannot be had: 413 over the limit, 415 for multipart form data, 400 when
  // it cannot be read. A body over the limit is still read to its end, and dropped: httplib 0.11
  // cannot close the connection from a handler, and stopping early would leave the rest of the body
  // to be read as the connection's next request.
  std::optional<httplib::Request> read_body(const httplib::Request& req, httplib::Response& res,
                                            const httplib::ContentReader& reader) const {
    const auto limit = static_cast<size_t>(options.max_body_bytes);
    std::string body;
    bool over = false;
    auto keep = [&](const char* data, size_t n) {
      if (!over && n <= limit - body.size()) body.append(data, n);
      else over = true;
      return true;
    };
    if (req.is_multipart_form_data()) {
      read_all(req, reader, [](const char*, size_t) { return true; });
      res.status = 415;
      res.set_content(error_body("the request body must be JSON (Content-Type: application/json), not multipart "
                                 "form data (curl -F): send it with -H 'Content-Type: application/json' -d"),
                      "application/json");
      return std::nullopt;
    }
    const bool complete = reader(keep);
    if (complete && !over) {
      httplib::Request full = req;
      full.body = std::move(body);
      return full;
    }
    std::string message;
    if (over || res.status == 413) {  // httplib sets 413 when the declared Content-Length is over it
      res.status = 413;
      message = cat("the request body is over the limit of ", options.max_body_bytes, " bytes (--max-body-bytes)",
                    over && req.has_header("Content-Encoding") ? ", once decompressed" : "");
    } else {
      res.status = 400;
      message = "the request body could not be read whole (cut short, or not valid chunked or compressed data)";
    }
    res.set_content(error_body(message), "application/json");
    return std::nullopt;
  }

  void unauthorized(httplib::Response& res) const {
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer");
    res.set_content(error_body("this server needs an API key: send 'Authorization: Bearer KEY' or 'X-API-Key: KEY'"),
                    "application/json");
  }

  bool authorized(const httplib::Request& req) const {
    if (options.api_key.empty()) return true;
    std::string given = req.get_header_value("Authorization");
    // The scheme's name is case-insensitive (RFC 9110): "bearer KEY" too.
    if (given.size() > 7 && strncasecmp(given.c_str(), "Bearer ", 7) == 0) given = given.substr(7);
    else given = req.get_header_value("X-API-Key");
    // Compared in time independent of where they differ.
    unsigned char diff = given.size() == options.api_key.size() ? 0 : 1;
    for (size_t i = 0; i < given.size(); ++i)
      diff |= static_cast<unsigned char>(given[i] ^ options.api_key[i % options.api_key.size()]);
    return diff == 0;
  }

  void routes() {
    // A request's arrival, on its connection's thread; unset (0 latency) for requests httplib
    // refuses before routing (malformed, or a URI too long).
    static thread_local Clock::time_point arrival{};
    http.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
      arrival = Clock::now();
      return httplib::Server::HandlerResponse::Unhandled;
    });
    http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      const char* endpoint = "other";
      for (const char* e : kEndpoints)
        if (req.path == e) endpoint = e;
      const Clock::time_point now = Clock::now();
      metrics.request(endpoint, res.status,
                      arrival == Clock::time_point{} ? 0.0 : std::chrono::duration<double>(now - arrival).count());
      arrival = {};
    });
    http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                       httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      std::string message;
      if (res.status == 404) message = cat("no such endpoint: ", req.method, " ", req.path, " (see /openapi.json)");
      else if (res.status == 413)
        message = cat("the request body is over the limit of ", options.max_body_bytes, " bytes (--max-body-bytes)");
      else if (res.status == 400 && !req.method.empty() &&
               !std::set<std::string>{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"}.count(req.method)) {
        res.status = 405;  // a method the HTTP library does not parse (TRACE, QUERY, …): 405, not 400
        const bool known = std::find(std::begin(kEndpoints), std::end(kEndpoints), req.path) != std::end(kEndpoints);
        res.set_header("Allow", known ? method_of(req.path) : "GET, POST");
        message = cat("the method ", req.method, " is not one this server takes (see /openapi.json)");
        res.set_header("Connection", "close");  // its body, if any, was not read: the connection cannot go on
      } else if (res.status == 400) {
        message = "the request is not valid HTTP";
        res.set_header("Connection", "close");
      }
      else message = cat("HTTP status ", res.status);
      res.set_content(error_body(message), "application/json");
      return httplib::Server::HandlerResponse::Handled;
    }));
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      res.status = 500;
      res.set_content(error_body("internal error"), "application/json");
    });
    // The JSON endpoints read their bodies themselves (read_body): httplib 0.11 holds its limit
    // against the declared Content-Length only, and a chunked or gzip-compressed body grew without
    // one (100 MB chunked, or 1 MB of gzip expanding to 1 GB, were answered 200).
    http.Post("/v1/translate", [this](const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& reader) {
      if (const auto full = read_body(req, res, reader)) answer(res, [&] { return translate(*full); }, &*full);
    });
    http.Post("/v1/score", [this](const httplib::Request& req, httplib::Response& res,
                                  const httplib::ContentReader& reader) {
      if (const auto full = read_body(req, res, reader)) answer(res, [&] { return score(*full); }, &*full);
    });
    // Other methods on the documented paths: 405 naming the one allowed.
    auto not_allowed = [](const char* path, const httplib::Request& req, httplib::Response& res) {
      const bool post = std::string_view(method_of(path)) == "POST";
      res.status = 405;
      res.set_header("Allow", post ? "POST" : "GET");
      res.set_content(error_body(cat(req.method, " ", path, ": this endpoint takes ", post ? "POST with a JSON body" : "GET",
                                     " (see /openapi.json)")),
                      "application/json");
    };
    for (const char* path : kEndpoints) {
      auto refuse = [path, not_allowed](const httplib::Request& req, httplib::Response& res) { not_allowed(path, req, res); };
      if (std::string_view(method_of(path)) == "POST") http.Get(path, refuse);
      http.Options(path, refuse);
    }
    // Every other request that may carry a body (POST, PUT, PATCH, DELETE, on any path): its body is
    // read to the end and dropped, never held (httplib would read a chunked or compressed one into
    // memory whole: 200 MB of inflated gzip on POST /health did), then 405 or 404.
    auto elsewhere = [not_allowed](const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& reader) {
      read_all(req, reader, [](const char*, size_t) { return true; });
      const auto* known = std::find(std::begin(kEndpoints), std::end(kEndpoints), req.path);
      if (known != std::end(kEndpoints)) return not_allowed(*known, req, res);
      res.status = 404;
      res.set_content(error_body(cat("no such endpoint: ", req.method, " ", req.path, " (see /openapi.json)")),
                      "application/json");
    };
    http.Post(".*", elsewhere);
    http.Put(".*", elsewhere);
    http.Patch(".*", elsewhere);
    http.Delete(".*", elsewhere);
    http.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
      answer(
          res,
          [&] {
            json list = json::array();
            for (const auto& m : models) list.push_back(m->info);
            return json{{"models", list}};
          },
          &req);
    });
    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      answer(res, [&] {
        return json{{"status", "ok"}, {"models", models.size()}, {"queue", batcher->queued()}};
      });
    });
    http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req)) return unauthorized(res);
      res.set_content(metrics.render(batcher->queued(), options.batching.max_queue_sentences),
                      "text/plain; version=0.0.4");
    });
    http.Get("/openapi.json", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(openapi, "application/json");
    });
    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(kIndexHtml), "text/html; charset=utf-8");
    });
  }
};

Server::Server(const ServerOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  options.validate();
  s.options = options;
  for (const ModelSpec& spec : options.models) {
    auto m = std::make_unique<LoadedModel>();
    m->spec = spec;
    m->options.vocab = spec.vocab;
    m->options.verify = options.verify;
    m->options.weights = options.weights;
    m->options.threads = options.threads_per_worker;
    try {
      const transformer::ModelInfo info = transformer::model_info(spec.path, false);
      m->translator = std::make_unique<transformer::Translator>(spec.path, m->options);
      json config = json::object();
      for (const auto& [k, v] : info.config) config[k] = json::parse(v);
      m->info = {{"name", spec.name}, {"config", config}, {"parameters", info.total_parameters}};
      m->decoder_layers = info.decoder_layers;
      m->heads = config.value("heads", int64_t{1});
    } catch (const Error& e) {
      throw Error(cat("model '", spec.name, "': ", e.what()));
    }
    s.models.push_back(std::move(m));
  }
  // The document states this server's own limits.
  json doc = json::parse(kOpenApiJson);
  json& schemas = doc["components"]["schemas"];
  for (const char* field : {"beam", "n_best"})
    schemas["TranslateRequest"]["properties"][field]["maximum"] = options.max_beam;
  json& texts = schemas["Texts"]["oneOf"];
  for (json* text : {&texts[0], &texts[1]["items"]}) (*text)["maxLength"] = options.max_text_length;
  texts[1]["maxItems"] = options.max_sentences;
  s.openapi = doc.dump(1) + "\n";
  s.batcher = std::make_unique<Batcher>(options.batching, [&s](const BatchReport& r) {
    s.metrics.batch(r.sentences, r.tokens, r.seconds);
  });
  const int http_threads = options.http_threads;
  s.http.new_task_queue = [http_threads] { return new httplib::ThreadPool(static_cast<size_t>(http_threads)); };
  s.http.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  // The listening socket, to widen its backlog once bound: Debian's cpp-httplib listens with a
  // backlog of 5, and more clients connecting at once had their connections dropped and retried
  // after a second, some failing (seen with 64 clients of scripts/serve_load.sh).
  s.http.set_socket_options([&s](socket_t sock) {
    // SO_REUSEADDR (a restarted server binds at once), not httplib's default SO_REUSEPORT, with
    // which a second server on the same port started and shared the connections.
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    s.listen_socket = sock;
  });
  s.http.set_tcp_nodelay(true);  // headers and body go in separate writes: no Nagle delay between them
  // A connection is closed after 100 requests, so that connections waiting for a thread get one.
  s.http.set_keep_alive_max_count(100);
  s.http.set_keep_alive_timeout(2);
  s.http.set_read_timeout(10);
  s.http.set_write_timeout(10);
  s.routes();
}

Server::~Server() {
  stop();
  impl_->batcher->stop();
}

std::vector<std::string> Server::load_messages() const {
  std::vector<std::string> out;
  for (const auto& m : impl_->models) {
    for (const std::string& n : m->translator->load_notes().notes) out.push_back(cat("note: model '", m->spec.name, "': ", n));
    for (const std::string& w : m->translator->load_notes().warnings)
      out.push_back(cat("warning: model '", m->spec.name, "': ", w));
  }
  return out;
}

int Server::bind() {
  Impl& s = *impl_;
  const int port = s.options.port == 0 ? s.http.bind_to_any_port(s.options.host)
                                        : (s.http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1);
  TFM_CHECK(port > 0, "cannot listen on ", s.options.host, ":", s.options.port,
            " (the port is in use, or the host is not an address of this machine)");
  s.port = port;
  if (s.listen_socket != INVALID_SOCKET) ::listen(s.listen_socket, SOMAXCONN);  // Linux: a new backlog
  return port;
}

void Server::listen() {
  // listen_after_bind returns after stop(), once the connections' threads are done; a stop() that
  // came before it started shut the socket down, so that it returns at once.
  if (!impl_->stopping) impl_->http.listen_after_bind();
  impl_->stopping = true;  // the socket is closed now: a later stop() must not touch its number
  impl_->batcher->stop();
}

void Server::stop() {
  Impl& s = *impl_;
  if (s.stopping.exchange(true)) return;
  // The socket is still open here (httplib closes it in its stop()). Shut down, it wakes and ends a
  // listen_after_bind that is running or about to start, which httplib's stop() alone does not do
  // before that has begun.
  if (s.listen_socket != INVALID_SOCKET) ::shutdown(s.listen_socket, SHUT_RDWR);
  s.http.stop();
}

}  // namespace tfm::serve
