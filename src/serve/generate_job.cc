// The server's generate job: a batch of prompts gathered from the jobs of one key, generated
// together, each result written back into its own job, and each token of a streamed job handed to
// the thread that sends it.
#include "serve/generate_job.h"

#include <cstring>

#include "core/error.h"

namespace tfm::serve {

namespace {

// A double by its exact bits (printed with 6 digits, nearby values would share a key).
uint64_t bits(double x) {
  uint64_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

}  // namespace

std::string generate_key(const std::string& model, const transformer::GenerationOptions& o) {
  const transformer::SearchOptions& s = o.search;
  return cat(model, "\tgenerate\t", s.beam_size, "\t", s.n_best, "\t", bits(s.length_penalty), "\t", s.sampling_topk,
             "\t", bits(s.sampling_topp), "\t", bits(s.sampling_temperature), "\t", s.seed, "\t", s.return_scores, "\t",
             o.max_new_tokens, "\t", o.min_new_tokens, "\t", o.include_prompt);
}

void GenerateJob::run_batch(const std::vector<Item>& items) {
  std::vector<std::vector<int32_t>> batch;
  bool streaming = false;
  for (const Item& item : items) {
    const auto& job = static_cast<GenerateJob&>(*item.job);
    batch.push_back(job.prompts[item.index]);
    streaming = streaming || job.stream;
  }
  transformer::GenerationOptions o = options;
  o.batch_sentences = static_cast<int64_t>(batch.size());
  transformer::TokenCallback on_token;
  if (streaming)
    on_token = [&](int64_t i, int32_t id) {
      const Item& item = items[static_cast<size_t>(i)];
      auto& job = static_cast<GenerateJob&>(*item.job);
      if (job.stream) job.push(item.index, id);
    };
  std::vector<transformer::Generation> out;
  try {
    out = generator.generate_batch_ids(batch, o, on_token);
  } catch (...) {
    for (const Item& item : items) static_cast<GenerateJob&>(*item.job).failed(std::current_exception());
    throw;  // the batcher fails the jobs waiting without a stream
  }
  for (size_t i = 0; i < items.size(); ++i)
    static_cast<GenerateJob&>(*items[i].job).finished(items[i].index, std::move(out[i]));
}

void GenerateJob::push(size_t prompt, int32_t id) {
  {
    std::lock_guard lock(mutex_);
    tokens_.push_back({prompt, id});
  }
  changed_.notify_all();
}

void GenerateJob::finished(size_t prompt, transformer::Generation result) {
  {
    std::lock_guard lock(mutex_);
    results[prompt] = std::move(result);
    --unfinished_;
  }
  changed_.notify_all();
}

void GenerateJob::failed(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = error;
  }
  changed_.notify_all();
}

bool GenerateJob::next_tokens(std::vector<Token>& out) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !tokens_.empty() || unfinished_ == 0 || error_; });
  if (error_) std::rethrow_exception(error_);
  out.assign(tokens_.begin(), tokens_.end());
  tokens_.clear();
  return unfinished_ == 0;
}

}  // namespace tfm::serve
