// transformer score -m MODEL: the log-probability of each target given its source under the model
// (teacher forcing, no label smoothing), as Marian's scorer and fairseq's reference scoring do:
// for rescoring n-best lists and filtering corpora. Prints "total<TAB>per_token" per pair, where
// the target's tokens include the end of sentence.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "cli/streams.h"
#include "core/error.h"
#include "core/threads.h"
#include "data/parallel_corpus.h"
#include "data/text.h"
#include "decode/translator.h"
#include "ops/loss.h"

namespace tfm::cli {

namespace {

struct Options {
  ModelPaths paths;
  std::string source, target, input;
  bool ids = false;
  int64_t batch_sentences = 64, threads = 0, max_input_tokens = 1024;
};

int run(const Options& o) {
  // The same documented maxima as translate's, before any reading.
  TFM_CHECK(o.batch_sentences >= 1 && o.batch_sentences <= kMaxBatchSentences, "--batch-size must be in [1, ",
            kMaxBatchSentences, "], got ", o.batch_sentences);
  TFM_CHECK(o.max_input_tokens >= 1 && o.max_input_tokens <= kMaxInputTokens, "--max-input-tokens must be in [1, ",
            kMaxInputTokens, "], got ", o.max_input_tokens);
  if (o.threads > 0) set_num_threads(static_cast<int>(o.threads));
  const LoadedModel lm = load_model_and_vocab(o.paths, !o.ids);
  const Transformer& model = *lm.model;
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!o.source.empty() || !o.target.empty()) {
    TFM_CHECK(!o.source.empty() && !o.target.empty(), "give both --source and --target, or tab-separated input");
    const std::vector<std::string> s = read_lines(o.source), t = read_lines(o.target);
    TFM_CHECK(s.size() == t.size(), "'", o.source, "' has ", s.size(), " lines but '", o.target, "' has ", t.size());
    for (size_t i = 0; i < s.size(); ++i) pairs.emplace_back(s[i], t[i]);
  } else {
    std::ifstream file;
    if (!o.input.empty()) file.open(o.input);
    TFM_CHECK(o.input.empty() || (file && !std::filesystem::is_directory(o.input)), "cannot read --input '", o.input,
              "'");
    if (o.input.empty()) check_stdin();
    std::istream& in = o.input.empty() ? std::cin : file;
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
      const size_t tab = line.find('\t');
      TFM_CHECK(tab != std::string::npos, "line ", n, " has no tab between source and target");
      TFM_CHECK(line.find('\t', tab + 1) == std::string::npos, "line ", n,
                " has more than one tab: expected 'source<TAB>target'");
      pairs.emplace_back(std::string(trim(line.substr(0, tab))), std::string(trim(line.substr(tab + 1))));
    }
  }
  const int64_t V = model.config().vocab_size;
  std::vector<std::vector<int32_t>> src, tgt;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const int64_t line = static_cast<int64_t>(i) + 1;
    if (o.ids) {
      src.push_back(parse_ids(pairs[i].first, line, model.config()));
      tgt.push_back(parse_ids(pairs[i].second, line, model.config()));
    } else {
      for (const std::string* side : {&pairs[i].first, &pairs[i].second}) {
        TFM_CHECK(valid_utf8(*side), "line ", line, " is not valid UTF-8");
        TFM_CHECK(side->find('\0') == std::string::npos, "line ", line, " contains a NUL byte (at byte ",
                  side->find('\0') + 1, " of its side)");
      }
      src.push_back(lm.vocab.encode(pairs[i].first));
      tgt.push_back(lm.vocab.encode(pairs[i].second));
    }
    for (auto* side : {&src.back(), &tgt.back()})
      if (static_cast<int64_t>(side->size()) > o.max_input_tokens) {
        std::fprintf(stderr, "warning: line %lld has more than %lld tokens on a side; scored its first %lld\n",
                     static_cast<long long>(line), static_cast<long long>(o.max_input_tokens),
                     static_cast<long long>(o.max_input_tokens));
        side->resize(static_cast<size_t>(o.max_input_tokens));
      }
  }
  for (size_t begin = 0; begin < src.size(); begin += static_cast<size_t>(o.batch_sentences)) {
    const size_t end = std::min(src.size(), begin + static_cast<size_t>(o.batch_sentences));
    const Batch batch = make_batch({src.begin() + begin, src.begin() + end}, {tgt.begin() + begin, tgt.begin() + end},
                                   model.config());
    const Tensor logits = model.forward(model.context(), batch, nullptr);
    const Tensor flat = logits.view({logits.shape().rows(), V});
    const Tensor lse = Tensor::empty({flat.size(0)}, flat.dtype());
    ops::cross_entropy(flat, batch.tgt_out.view({batch.tgt_out.numel()}), {0.0, model.config().pad_id}, lse);
    const int64_t T = batch.tgt_out.size(1);
    for (size_t b = 0; b < end - begin; ++b) {
      const int32_t len = batch.tgt_lengths.data<int32_t>()[b];
      double total = 0;
      for (int64_t t = 0; t < len; ++t) {
        const int64_t row = static_cast<int64_t>(b) * T + t;
        total += flat.data<float>()[row * V + batch.tgt_out.data<int32_t>()[row]] - lse.data<float>()[row];
      }
      std::printf("%.6f\t%.6f\n", total, total / len);
    }
    check_stdout();  // stop at the first batch that cannot be written
  }
  return 0;
}

Action add_score(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "score", "log-probability of each target given its source (teacher forcing); prints 'total<TAB>per_token'");
  add_model_options(*cmd, o->paths);
  cmd->add_option("--source", o->source, "source sentences, one per line");
  cmd->add_option("--target", o->target, "target sentences, aligned with --source");
  cmd->add_option("-i,--input", o->input, "tab-separated 'source<TAB>target' lines (default: stdin)");
  cmd->add_flag("--ids", o->ids, "sentences are space-separated token ids");
  cmd->add_option("--batch-size", o->batch_sentences, cat("pairs scored together (at most ", kMaxBatchSentences, ")"))
      ->capture_default_str();
  cmd->add_option("--max-input-tokens", o->max_input_tokens,
                  cat("longer sides are truncated, with a warning (at most ", kMaxInputTokens, ")"))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads (0: all cores)")->capture_default_str()->check(CLI::NonNegativeNumber);
  return [cmd, o] { return *cmd ? run(*o) : -1; };
}

}  // namespace

static const Command kCommand(45, add_score);

}  // namespace tfm::cli
