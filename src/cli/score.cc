// transformer score -m MODEL: the log-probability of each target given its source under the model
// (teacher forcing, no label smoothing), as Marian's scorer and fairseq's reference scoring do:
// for rescoring n-best lists and filtering corpora. Prints "total<TAB>per_token" per pair, where
// the target's tokens include the end of sentence. A decoder-only model scores lines instead (no
// tab): one log-probability per line, its tokens' and the end of sequence's after BOS.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "cli/streams.h"
#include "core/error.h"
#include "data/parallel_corpus.h"
#include "transformer/generator.h"
#include "transformer/model.h"
#include "transformer/text.h"
#include "transformer/translator.h"

namespace tfm::cli {

namespace {

struct Options {
  ModelPaths paths;
  std::string source, target, input;
  bool ids = false, bf16 = false;
  int64_t batch_sentences = 64, threads = 0, max_input_tokens = 1024;
  std::string device = "cpu";
};

// The loading options of either model: scoring runs the training-time forward pass, on the plain
// weights.
transformer::TranslatorOptions load_options(const Options& o) {
  transformer::TranslatorOptions lo;
  lo.vocab = o.paths.vocab;
  lo.need_vocab = !o.ids;
  lo.verify = !o.paths.no_verify;
  lo.weights = o.bf16 ? transformer::TranslatorOptions::Weights::kBf16 : transformer::TranslatorOptions::Weights::kPlain;
  lo.threads = static_cast<int>(o.threads);
  lo.device = o.device;
  return lo;
}

// A decoder-only model: each line of the input (no tab) scored alone, its log-probability printed
// as soon as its batch is scored.
int run_lm(const Options& o, const transformer::ScoreOptions& so) {
  TFM_CHECK(o.source.empty() && o.target.empty(), "'", o.paths.model, "' is a decoder-only model: it scores lines "
            "(standard input or --input), not --source and --target pairs");
  const transformer::Generator generator(o.paths.model, load_options(o));
  print_notes(generator.load_notes());
  std::ifstream file;
  if (!o.input.empty()) open_input(file, o.input, "--input");
  if (o.input.empty()) check_stdin();
  std::istream& in = o.input.empty() ? std::cin : file;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const auto batch = static_cast<size_t>(o.batch_sentences);
  for (size_t begin = 0; begin < lines.size(); begin += batch) {
    const size_t end = std::min(lines.size(), begin + batch);
    std::vector<transformer::Score> scores;
    try {
      if (o.ids) {
        std::vector<std::vector<int32_t>> ids;
        for (size_t i = begin; i < end; ++i)
          ids.push_back(generator.parse_ids(transformer::clean_input(lines[i]).text, static_cast<int64_t>(i) + 1));
        scores = generator.score_ids(ids, so);
      } else {
        scores = generator.score({lines.begin() + static_cast<std::ptrdiff_t>(begin),
                                  lines.begin() + static_cast<std::ptrdiff_t>(end)}, so);
      }
    } catch (const transformer::SentenceError& e) {
      throw Error(cat("line ", static_cast<long long>(begin) + e.index() + 1, ": ", e.problem()));
    }
    for (size_t k = 0; k < scores.size(); ++k) {
      const std::string line = cat("line ", begin + k + 1);
      for (const std::string& w : transformer::repair_warnings(scores[k].target_repairs, line))
        std::fprintf(stderr, "warning: %s\n", w.c_str());
      if (scores[k].truncated)
        std::fprintf(stderr, "warning: %s has more tokens than --max-input-tokens %lld or the model's positions "
                     "allow; scored its first %lld\n", line.c_str(), static_cast<long long>(o.max_input_tokens),
                     static_cast<long long>(scores[k].tokens - 1));
      std::printf("%.6f\n", scores[k].total);
    }
    check_stdout();  // stop at the first batch that cannot be written
  }
  return 0;
}

int run(const Options& o) {
  // The same documented maxima as translate's, named by their flags, before any reading.
  TFM_CHECK(o.batch_sentences >= 1 && o.batch_sentences <= transformer::kMaxBatchSentences, "--batch-size must be in [1, ",
            transformer::kMaxBatchSentences, "], got ", o.batch_sentences);
  TFM_CHECK(o.max_input_tokens >= 1 && o.max_input_tokens <= transformer::kMaxInputTokens,
            "--max-input-tokens must be in [1, ", transformer::kMaxInputTokens, "], got ", o.max_input_tokens);
  transformer::ScoreOptions so;
  so.batch_sentences = o.batch_sentences;
  so.max_input_tokens = o.max_input_tokens;
  for (const auto& [key, value] : transformer::model_info(o.paths.model, false).config)
    if (key == "architecture" && value == "\"decoder-only\"") return run_lm(o, so);
  const transformer::Translator translator(o.paths.model, load_options(o));
  print_notes(translator.load_notes());
  std::vector<std::string> sources, targets;
  if (!o.source.empty() || !o.target.empty()) {
    TFM_CHECK(!o.source.empty() && !o.target.empty(), "give both --source and --target, or tab-separated input");
    sources = read_lines(o.source);
    targets = read_lines(o.target);
    TFM_CHECK(sources.size() == targets.size(), "'", o.source, "' has ", sources.size(), " lines but '", o.target,
              "' has ", targets.size());
  } else {
    std::ifstream file;
    if (!o.input.empty()) open_input(file, o.input, "--input");
    if (o.input.empty()) check_stdin();
    std::istream& in = o.input.empty() ? std::cin : file;
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
      const size_t tab = line.find('\t');
      TFM_CHECK(tab != std::string::npos, "line ", n, " has no tab between source and target");
      TFM_CHECK(line.find('\t', tab + 1) == std::string::npos, "line ", n,
                " has more than one tab: expected 'source<TAB>target'");
      sources.push_back(line.substr(0, tab));
      targets.push_back(line.substr(tab + 1));
    }
  }
  // One batch at a time (the translator's batches: pairs in input order), each printed as soon as
  // it is scored, so that output that cannot be written stops the run at once.
  const auto batch = static_cast<size_t>(o.batch_sentences);
  for (size_t begin = 0; begin < sources.size(); begin += batch) {
    const size_t end = std::min(sources.size(), begin + batch);
    std::vector<transformer::Score> scores;
    try {  // a pair's error, named by its line (the library counts from 0 in the batch)
    if (o.ids) {
      std::vector<std::vector<int32_t>> src, tgt;
      for (size_t i = begin; i < end; ++i) {
        const int64_t line = static_cast<int64_t>(i) + 1;
        src.push_back(translator.parse_ids(transformer::clean_input(sources[i]).text, line));
        tgt.push_back(translator.parse_ids(transformer::clean_input(targets[i]).text, line));
      }
      scores = translator.score_ids(src, tgt, so);
    } else {
      scores = translator.score({sources.begin() + begin, sources.begin() + end},
                                {targets.begin() + begin, targets.begin() + end}, so);
    }
    } catch (const transformer::SentenceError& e) {
      throw Error(cat("line ", static_cast<long long>(begin) + e.index() + 1, ": ", e.problem()));
    }
    for (size_t k = 0; k < scores.size(); ++k) {
      const transformer::Score& s = scores[k];
      const std::string line = cat("line ", begin + k + 1);
      for (const std::string& w : transformer::repair_warnings(s.source_repairs, line + ", source side"))
        std::fprintf(stderr, "warning: %s\n", w.c_str());
      for (const std::string& w : transformer::repair_warnings(s.target_repairs, line + ", target side"))
        std::fprintf(stderr, "warning: %s\n", w.c_str());
      if (s.truncated)
        std::fprintf(stderr, "warning: line %zu has more than %lld tokens on a side; scored its first %lld\n",
                     begin + k + 1, static_cast<long long>(o.max_input_tokens),
                     static_cast<long long>(o.max_input_tokens));
      std::printf("%.6f\t%.6f\n", s.total, s.per_token);
    }
    check_stdout();  // stop at the first batch that cannot be written
  }
  return 0;
}

Action add_score(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "score", "log-probability of each target given its source (teacher forcing); prints 'total<TAB>per_token' "
               "(a decoder-only model: of each line; prints one number per line)");
  add_model_options(*cmd, o->paths);
  cmd->add_option("--source", o->source, "source sentences, one per line");
  cmd->add_option("--target", o->target, "target sentences, aligned with --source");
  cmd->add_option("-i,--input", o->input,
                  "tab-separated 'source<TAB>target' lines, or a decoder-only model's lines (default: stdin)");
  cmd->add_flag("--ids", o->ids, "sentences are space-separated token ids");
  cmd->add_flag("--bf16", o->bf16,
                "bfloat16 products (inputs rounded to bfloat16, float32 sums), as train --bf16 and translate --bf16: "
                "on a GPU its tensor cores; on a CPU faster with AVX-512 BF16, slower without");
  cmd->add_option("--batch-size", o->batch_sentences, cat("accepted, at most ", transformer::kMaxBatchSentences, "; each pair is scored alone, so that its score does not depend on the others (docs/api.md)"))
      ->capture_default_str();
  cmd->add_option("--max-input-tokens", o->max_input_tokens,
                  cat("longer sides are truncated, with a warning (at most ", transformer::kMaxInputTokens, ")"))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads (0: all cores)")->capture_default_str()->check(thread_count());
  cmd->add_option("--device", o->device, "where to score: cpu, or cuda (cuda:0), the first NVIDIA GPU")
      ->capture_default_str();
  return [cmd, o] { return *cmd ? run(*o) : -1; };
}

}  // namespace

static const Command kCommand(45, add_score);

}  // namespace tfm::cli
