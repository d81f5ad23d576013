// The server's options: -m's NAME=PATH, the checks of every option (naming its flag), and the
// API key read from its file.
#include "serve/options.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "transformer/text.h"

namespace tfm::serve {

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
  TFM_CHECK(max_headers >= 1, "--max-headers must be >= 1, got ", max_headers);
  TFM_CHECK(max_header_bytes >= 1024, "--max-header-bytes must be >= 1024, got ", max_header_bytes);
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

}  // namespace tfm::serve
