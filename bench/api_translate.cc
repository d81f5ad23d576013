// The C++ side of bench/python_translate.py: transformer::Translator::translate_ids (the public C++
// API) on BM_Translate's batch (bench_model.cc: 64 sentences of 25 random tokens, seed 5, the output
// forced to 25 tokens + end of sentence), timed per call, so that the Python module's throughput on
// the same model file and batch can be compared with it in the same run. Not a Google Benchmark
// (it is not part of tfm_bench): a plain program the Python script runs between its own timings.
//
//   api_translate MODEL --print-sources          the batch, one sentence of ids per line
//   api_translate MODEL [--beam N] [--iterations K] [--threads T]
//                                                one untimed call, then K timed calls; prints JSON
//   api_translate MODEL [--beam N] [--threads T] --serve
//                                                one untimed call, then for each line K read from
//                                                stdin, K timed calls and a line of JSON, until EOF
//                                                (the model stays loaded and warm between rounds)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "transformer/translator.h"

namespace {

// bench_model.cc's random_sentences: ids in [4, vocab), the same numbers for the same seed.
std::vector<std::vector<int32_t>> random_sentences(int64_t n, int64_t len, int64_t vocab, uint64_t seed) {
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(n));
  const tfm::RngStream rng{seed, 77};
  uint64_t k = 0;
  for (auto& s : out)
    for (int64_t i = 0; i < len; ++i) s.push_back(4 + static_cast<int32_t>(rng.uniform(k++) * static_cast<float>(vocab - 4)));
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: api_translate MODEL [--print-sources] [--beam N] [--iterations K] [--threads T] [--serve]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string model = argv[1];
  bool print_sources = false, serve = false;
  int64_t beam = 1, iterations = 1;
  int threads = 0;
  for (int i = 2; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--print-sources") == 0) print_sources = true;
    else if (std::strcmp(argv[i], "--serve") == 0) serve = true;
    else if (std::strcmp(argv[i], "--beam") == 0 && has_value) beam = std::atoll(argv[++i]);
    else if (std::strcmp(argv[i], "--iterations") == 0 && has_value) iterations = std::atoll(argv[++i]);
    else if (std::strcmp(argv[i], "--threads") == 0 && has_value) threads = std::atoi(argv[++i]);
    else return usage();
  }
  try {
    transformer::TranslatorOptions options;
    options.need_vocab = false;
    options.threads = threads;
    const transformer::Translator translator(model, options);  // packed weights, as BM_Translate
    const auto sources = random_sentences(64, 25, translator.vocab_size(), 5);
    if (print_sources) {
      for (const auto& s : sources) {
        for (size_t i = 0; i < s.size(); ++i) std::printf(i ? " %d" : "%d", s[i]);
        std::printf("\n");
      }
      return 0;
    }
    transformer::TranslateOptions o;
    o.search.beam_size = beam;
    o.search.max_length_a = 0;
    o.search.max_length_b = 26;  // 25 tokens + EOS
    o.search.min_length = 26;
    translator.translate_ids(sources, o);  // untimed, as BM_Translate's first call
    auto timed = [&](int64_t calls) {
      std::printf("{\"beam\": %lld, \"tokens\": [", static_cast<long long>(beam));
      std::string seconds;
      for (int64_t k = 0; k < calls; ++k) {
        const auto start = std::chrono::steady_clock::now();
        int64_t produced = 0;
        for (const transformer::Translation& t : translator.translate_ids(sources, o))
          produced += static_cast<int64_t>(t.hypotheses[0].ids.size());
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf(k ? ", %lld" : "%lld", static_cast<long long>(produced));
        seconds += (k ? ", " : "") + std::to_string(s);
      }
      std::printf("], \"seconds\": [%s]}\n", seconds.c_str());
      std::fflush(stdout);
    };
    if (!serve) {
      timed(iterations);
      return 0;
    }
    for (std::string line; std::getline(std::cin, line);) timed(std::atoll(line.c_str()));
  } catch (const transformer::Error& e) {
    std::fprintf(stderr, "api_translate: %s\n", e.what());
    return 1;
  }
  return 0;
}
