#include "decode/translator.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "core/device.h"
#include "core/error.h"
#include "core/memory.h"
#include "core/threads.h"
#include "decode/batching.h"

namespace tfm {

namespace {
// Bytes for people: GiB with two decimals, MiB below a tenth of a GiB, plain bytes below a MiB.
std::string amount(double bytes) {
  char text[48];
  if (bytes >= 0.1 * (1 << 30)) std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1 << 30));
  else if (bytes >= (1 << 20)) std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1 << 20));
  else std::snprintf(text, sizeof text, "%.0f bytes", bytes);
  return text;
}

// Refuses, before any work, a translation whose decoding is estimated (estimate_search_bytes) to
// need more memory than the limit: the worst batch, times the batches decoded at once.
// The decoding state lives where the model's parameters are: host memory on the CPU, the GPU's own
// memory on a GPU (what its backend says is free, with its allocator's kept blocks).
void check_memory(const ModelConfig& c, Device device, const TranslateOptions& o, const std::vector<size_t>& order,
                  const std::vector<Translation>& out, int64_t batches, int64_t in_flight) {
  if (o.max_memory == 0 || batches == 0) return;
  DeviceMemory* backend = device == Device::CPU ? nullptr : device_memory(device);
  const int64_t available = device == Device::CPU ? available_memory_bytes() : backend ? backend->available_bytes() : 0;
  const int64_t limit = o.max_memory > 0 ? o.max_memory : available / 10 * 8;
  if (limit <= 0) return;  // the device's memory is not known
  double worst = 0;
  int64_t worst_sentences = 0, worst_tokens = 0;
  for (int64_t i = 0; i < batches; ++i) {  // sorted by length: a batch's last sentence is its longest
    const size_t begin = static_cast<size_t>(i * o.batch_sentences);
    const size_t end = std::min(order.size(), begin + static_cast<size_t>(o.batch_sentences));
    const int64_t tokens = static_cast<int64_t>(out[order[end - 1]].source_ids.size());
    const double bytes = static_cast<double>(estimate_search_bytes(c, static_cast<int64_t>(end - begin), tokens, o.search));
    if (bytes > worst) worst = bytes, worst_sentences = static_cast<int64_t>(end - begin), worst_tokens = tokens;
  }
  const double need = worst * static_cast<double>(in_flight);
  const auto longest = static_cast<int64_t>(
      std::min(std::floor(o.search.max_length_a * static_cast<double>(worst_tokens) + o.search.max_length_b), 4.0e18));
  TFM_CHECK(need <= static_cast<double>(limit), "translating would need about ", amount(need),
            ", more than the limit of ", amount(static_cast<double>(limit)),
            o.max_memory > 0              ? " (max_memory, --max-memory)"
            : device == Device::CPU       ? " (80% of the memory available now)"
                                          : cat(" (80% of the ", name(device), " device's memory available now)"),
            ": a batch of ",
            worst_sentences, " sentences of up to ", worst_tokens, " tokens, outputs of up to ", longest,
            " tokens (max length a ", o.search.max_length_a, ", b ", o.search.max_length_b, ") with beam ",
            o.search.beam_size, in_flight > 1 ? cat(", ", in_flight, " batches at a time") : std::string(),
            ". Lower the beam size, the batch size or the maximum output length, or raise the limit (0: none)");
}

// The sentences to decode: each source truncated to the input limit, with its prefix, and the
// indices of the non-empty ones sorted by length (stable), so that a batch holds similar lengths.
struct Prepared {
  std::vector<Translation> out;  // [sentences]
  std::vector<size_t> order;     // the non-empty sources, shortest first
  bool any_prefix = false;       // some source has a non-empty prefix
};

Prepared prepare(const std::vector<std::vector<int32_t>>& sources, const TranslateOptions& o,
                 const std::vector<std::vector<int32_t>>& prefixes) {
  Prepared p;
  p.out.resize(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    Translation& t = p.out[i];
    t.source_ids = sources[i];
    if (static_cast<int64_t>(sources[i].size()) > o.max_input_tokens) {
      t.source_ids.resize(static_cast<size_t>(o.max_input_tokens));
      t.truncated = true;
    }
    if (!prefixes.empty() && !t.source_ids.empty()) {
      if (static_cast<int64_t>(prefixes[i].size()) > o.max_input_tokens)
        throw transformer::SentenceError(static_cast<long long>(i),
                                         cat("the target prefix has ", prefixes[i].size(),
                                             " tokens, more than the input token limit of ", o.max_input_tokens));
      t.prefix_ids = prefixes[i];
      p.any_prefix = p.any_prefix || !prefixes[i].empty();
    }
  }
  std::vector<size_t> lengths(p.out.size());
  for (size_t i = 0; i < p.out.size(); ++i) lengths[i] = p.out[i].source_ids.size();
  p.order = order_by_length(lengths);
  return p;
}

// What decoding the batches needs: the model, the options and the shortlist.
struct BatchDecoder {
  const Transformer& model;
  const TranslateOptions& o;
  const Shortlist* shortlist;

  // Decodes batch i of the sorted sentences into their translations.
  void operator()(Prepared& p, int64_t i) const {
    const size_t begin = static_cast<size_t>(i * o.batch_sentences);
    const size_t end = std::min(p.order.size(), begin + static_cast<size_t>(o.batch_sentences));
    std::vector<std::vector<int32_t>> batch, batch_prefixes;
    for (size_t j = begin; j < end; ++j) batch.push_back(p.out[p.order[j]].source_ids);
    if (p.any_prefix)
      for (size_t j = begin; j < end; ++j) batch_prefixes.push_back(p.out[p.order[j]].prefix_ids);
    if (o.search.beam_size == 1 && o.search.n_best == 1) {
      std::vector<Hypothesis> best = greedy_search(model, batch, o.search, shortlist, batch_prefixes);
      for (size_t j = begin; j < end; ++j) p.out[p.order[j]].hypotheses = {std::move(best[j - begin])};
    } else {
      std::vector<std::vector<Hypothesis>> nbest = beam_search(model, batch, o.search, shortlist, batch_prefixes);
      for (size_t j = begin; j < end; ++j) p.out[p.order[j]].hypotheses = std::move(nbest[j - begin]);
    }
  }
};

}  // namespace

std::vector<Translation> translate_ids(const Transformer& model, const std::vector<std::vector<int32_t>>& sources,
                                       const TranslateOptions& o, const Shortlist* shortlist,
                                       const std::vector<std::vector<int32_t>>& prefixes) {
  o.validate();
  TFM_CHECK(prefixes.empty() || prefixes.size() == sources.size(), "there are ", sources.size(), " sentences but ",
            prefixes.size(), " target prefixes");
  Prepared p = prepare(sources, o, prefixes);
  const int64_t batches = p.order.empty() ? 0 : (static_cast<int64_t>(p.order.size()) - 1) / o.batch_sentences + 1;
  const int64_t parallel = parallel_batches(model, o.parallel_batches, batches);
  check_memory(model.config(), model.params().device(), o, p.order, p.out, batches, std::max<int64_t>(parallel, 1));
  const BatchDecoder decode{model, o, shortlist};
  run_batches(batches, parallel, [&](int64_t i) { decode(p, i); });
  return std::move(p.out);
}

}  // namespace tfm
