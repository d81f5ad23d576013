#pragma once
// A /v1/generate request's prompts as a batcher job (serve/batcher.h), with the key that lets
// requests with equal options share batches, and for a streamed request the tokens as they are
// generated, waiting for the HTTP thread that sends them.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "serve/batcher.h"
#include "transformer/generator.h"

namespace tfm::serve {

// The key of a generate job: the model and every option (streaming does not change the output).
std::string generate_key(const std::string& model, const transformer::GenerationOptions& o);

class GenerateJob : public Job {
 public:
  // A token of the stream: the prompt's index in the request and the token's id.
  struct Token {
    size_t prompt = 0;
    int32_t id = 0;
  };

  GenerateJob(std::string key, std::vector<int64_t> costs, const transformer::Generator& g,
              transformer::GenerationOptions o, std::vector<std::vector<int32_t>> prompts, bool stream)
      : Job(std::move(key), std::move(costs)), generator(g), options(o), prompts(std::move(prompts)),
        stream(stream), results(this->prompts.size()), unfinished_(this->prompts.size()) {}

  void run_batch(const std::vector<Item>& items) override;

  // Streaming: waits for new tokens or the end, and moves the new tokens into `out`; true once
  // every prompt's result is written. Rethrows a failure of the decoding.
  bool next_tokens(std::vector<Token>& out);

  const transformer::Generator& generator;
  const transformer::GenerationOptions options;
  const std::vector<std::vector<int32_t>> prompts;
  const bool stream;
  std::vector<transformer::Generation> results;

 private:
  void push(size_t prompt, int32_t id);
  void finished(size_t prompt, transformer::Generation result);
  void failed(std::exception_ptr error);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Token> tokens_;
  size_t unfinished_;
  std::exception_ptr error_;
};

}  // namespace tfm::serve
