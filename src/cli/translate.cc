// transformer translate -m MODEL: sentences on stdin (or --input) → translations on stdout, in order.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "cli/streams.h"
#include "core/error.h"
#include "core/threads.h"
#include "data/text.h"
#include "decode/translator.h"

namespace tfm::cli {

namespace {

struct Options {
  ModelPaths paths;
  std::string input, attention_path, shortlist_path;
  TranslateOptions translate;
  bool scores = false, ids = false, int8 = false, stats = false, packed = true;
  int64_t threads = 0, chunk_lines = 10000;
  double max_memory_gib = -1;  // -1: automatic
};

// Reads up to `max` lines; returns false at end of input with nothing read.
bool read_chunk(std::istream& in, int64_t max, std::vector<std::string>& lines) {
  lines.clear();
  std::string line;
  while (static_cast<int64_t>(lines.size()) < max && std::getline(in, line)) lines.push_back(line);
  return !lines.empty();
}

int run(Options o) {
  TFM_CHECK(o.max_memory_gib == -1 || (o.max_memory_gib >= 0 && o.max_memory_gib < 1e9),
            "--max-memory must be a number of GiB, or 0 (no limit), got ", o.max_memory_gib);
  if (o.max_memory_gib >= 0) o.translate.max_memory = static_cast<int64_t>(o.max_memory_gib * (1 << 30));
  o.translate.validate();  // before reading any input: bad options fail at once
  if (o.threads > 0) set_num_threads(static_cast<int>(o.threads));
  const LoadedModel lm = load_model_and_vocab(o.paths, !o.ids);
  // Translation never reads the float32 weights again once they have their copies.
  if (o.int8) lm.model->quantize_int8(Transformer::PlainWeights::kRelease);
  else if (o.packed) lm.model->pack_weights(Transformer::PlainWeights::kRelease);
  Shortlist shortlist;
  if (!o.shortlist_path.empty()) {
    shortlist = Shortlist::load(o.shortlist_path, lm.model->config().vocab_size);
    shortlist.check_vocabulary(lm.model->config().vocab_size,
                               lm.vocab_fingerprint.empty() && !o.ids ? lm.vocab.fingerprint() : lm.vocab_fingerprint,
                               o.paths.model);
  }
  std::ifstream file;
  if (!o.input.empty()) {
    file.open(o.input, std::ios::binary);
    TFM_CHECK(file && !std::filesystem::is_directory(o.input), "cannot read --input '", o.input, "'");
  }
  if (o.input.empty()) check_stdin();
  std::istream& in = o.input.empty() ? std::cin : file;
  std::ofstream attention;
  if (!o.attention_path.empty()) {
    attention.open(o.attention_path);
    TFM_CHECK(attention, "cannot write --attention '", o.attention_path, "'");
  }
  TranslateOptions to = o.translate;
  to.search.record_attention = !o.attention_path.empty();
  if (!o.shortlist_path.empty()) to.search.shortlist = &shortlist;
  std::vector<std::string> lines;
  int64_t line_number = 0, output_tokens = 0;
  double seconds = 0;  // in translate_ids: loading, reading, tokenizing and writing excluded
  while (read_chunk(in, o.chunk_lines, lines)) {
    std::vector<std::vector<int32_t>> sources;
    for (std::string& raw : lines) {
      ++line_number;
      if (raw.find('\0') != std::string::npos) {  // the tokenizer would stop at the first one
        std::fprintf(stderr, "warning: line %lld contains NUL bytes; replaced by spaces\n",
                     static_cast<long long>(line_number));
        std::replace(raw.begin(), raw.end(), '\0', ' ');
      }
      std::string line(trim(raw));
      if (o.ids) {
        sources.push_back(parse_ids(line, line_number, lm.model->config()));
        continue;
      }
      if (!valid_utf8(line)) {
        std::fprintf(stderr, "warning: line %lld is not valid UTF-8; invalid bytes replaced by U+FFFD\n",
                     static_cast<long long>(line_number));
        line = repair_utf8(line);
      }
      sources.push_back(lm.vocab.encode(line));
    }
    const auto start = std::chrono::steady_clock::now();
    const std::vector<Translation> out = translate_ids(*lm.model, sources, to);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const Translation& t : out)
      if (!t.hypotheses.empty()) output_tokens += static_cast<int64_t>(t.hypotheses[0].tokens.size());
    const int64_t first = line_number - static_cast<int64_t>(lines.size()) + 1;
    for (size_t i = 0; i < out.size(); ++i) {
      const Translation& t = out[i];
      const int64_t n = first + static_cast<int64_t>(i);
      if (t.truncated)
        std::fprintf(stderr, "warning: line %lld has more than %lld tokens; translated its first %lld\n",
                     static_cast<long long>(n), static_cast<long long>(to.max_input_tokens),
                     static_cast<long long>(to.max_input_tokens));
      auto text = [&](const Hypothesis& h) { return o.ids ? join_ids(h.tokens) : lm.vocab.decode(h.tokens); };
      if (to.search.n_best > 1) {
        for (const Hypothesis& h : t.hypotheses)
          std::printf("%lld ||| %s ||| %.6f\n", static_cast<long long>(n - 1), text(h).c_str(), h.normalized);
        if (t.hypotheses.empty()) std::printf("%lld ||| ||| 0\n", static_cast<long long>(n - 1));
      } else {
        const std::string best = t.hypotheses.empty() ? "" : text(t.hypotheses[0]);
        if (o.scores) std::printf("%s\t%.6f\n", best.c_str(), t.hypotheses.empty() ? 0.0 : t.hypotheses[0].normalized);
        else std::printf("%s\n", best.c_str());
      }
      if (attention.is_open()) {
        nlohmann::json j = {{"line", n}};
        std::vector<std::string> src, tgt;
        for (int32_t id : t.source_ids) src.push_back(o.ids ? std::to_string(id) : lm.vocab.piece(id));
        src.push_back("</s>");
        if (!t.hypotheses.empty()) {
          const Hypothesis& h = t.hypotheses[0];
          for (int32_t id : h.tokens) tgt.push_back(o.ids ? std::to_string(id) : lm.vocab.piece(id));
          tgt.push_back("</s>");
          // [layers][heads][target][source]
          const Tensor& a = h.attention;
          nlohmann::json layers = nlohmann::json::array();
          const float* p = a.data<float>();
          for (int64_t l = 0; l < a.size(0); ++l) {
            nlohmann::json heads = nlohmann::json::array();
            for (int64_t hd = 0; hd < a.size(1); ++hd) {
              nlohmann::json rows = nlohmann::json::array();
              for (int64_t r = 0; r < a.size(2); ++r) {
                const float* row = p + ((l * a.size(1) + hd) * a.size(2) + r) * a.size(3);
                rows.push_back(std::vector<float>(row, row + a.size(3)));
              }
              heads.push_back(rows);
            }
            layers.push_back(heads);
          }
          j["attention"] = layers;
        }
        j["source"] = src;
        j["target"] = tgt;
        attention << j.dump() << '\n';
        if (!attention.good()) check_stream(attention, cat("--attention '", o.attention_path, "'"));
      }
    }
    check_stdout();  // a full disk stops the run here, not after translating everything
    if (attention.is_open()) check_stream(attention, cat("--attention '", o.attention_path, "'"));
  }
  if (attention.is_open()) {
    attention.close();
    TFM_CHECK(!attention.fail(), "cannot write --attention '", o.attention_path, "': closing it failed");
  }
  if (o.stats)
    std::fprintf(stderr, "translated %lld sentences, %lld tokens in %.3f s: %.0f tokens/s\n",
                 static_cast<long long>(line_number), static_cast<long long>(output_tokens), seconds,
                 static_cast<double>(output_tokens) / std::max(seconds, 1e-9));
  return 0;
}

Action add_translate(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("translate", "translate sentences from stdin (or --input) to stdout");
  add_model_options(*cmd, o->paths);
  cmd->add_option("-i,--input", o->input, "input file (default: stdin)");
  SearchOptions& s = o->translate.search;
  cmd->add_option("-b,--beam", s.beam_size, cat("beam size (1: greedy; at most ", kMaxBeamSize, ")"))
      ->capture_default_str();
  cmd->add_option("--length-penalty", s.length_penalty, "alpha of ((5+|Y|)/6)^alpha")->capture_default_str();
  cmd->add_option("--max-length-a", s.max_length_a, "at most a*source_tokens + b output tokens")->capture_default_str();
  cmd->add_option("--max-length-b", s.max_length_b, "see --max-length-a")->capture_default_str();
  cmd->add_option("--min-length", s.min_length,
                  "no end of sentence before this many output tokens, end of sentence included (benchmarks "
                  "force a length with --min-length = max length)")
      ->capture_default_str();
  cmd->add_option("--n-best", s.n_best, "print this many hypotheses per line: 'i ||| text ||| score'")->capture_default_str();
  cmd->add_flag("--scores", o->scores, "append each translation's normalized log-probability after a tab");
  cmd->add_flag("--ids", o->ids, "read and write space-separated token ids instead of text");
  cmd->add_flag("--stats", o->stats, "print sentences, output tokens and seconds of translation to stderr");
  cmd->add_flag("--int8", o->int8, "int8 weight products: faster (most with AVX-512 VNNI or AMX), slightly less exact");
  cmd->add_flag("--packed-weights,!--no-packed-weights", o->packed,
                "float32 weights packed once for decoding's products (default; faster; the layers' weights are "
                "then kept only in packed form, the output projection also as the embedding)");
  cmd->add_option("--shortlist", o->shortlist_path,
                  "score only the target tokens this shortlist (from `transformer shortlist`) selects for each "
                  "batch: faster, may change translations");
  cmd->add_option("--attention", o->attention_path,
                  "write encoder-decoder attention as JSON lines: [layer][head][target][source] per sentence");
  cmd->add_option("--batch-size", o->translate.batch_sentences,
                  cat("sentences decoded together (at most ", kMaxBatchSentences, ")"))
      ->capture_default_str();
  cmd->add_option("--parallel-batches", o->translate.parallel_batches,
                  "batches decoded at the same time, one thread each, at most --threads (0: one per thread when "
                  "a chunk of input lines has at least two batches per thread; 1: one batch at a time on all "
                  "threads). Each batch in flight holds its own decoding caches: more memory")
      ->capture_default_str();
  cmd->add_option("--max-input-tokens", o->translate.max_input_tokens,
                  cat("longer inputs are truncated, with a warning (at most ", kMaxInputTokens, ")"))
      ->capture_default_str();
  cmd->add_option("--max-memory", o->max_memory_gib,
                  "refuse, before starting, a translation whose decoding is estimated to need more than this many "
                  "GiB (default: 80% of the memory available at the start; 0: no limit)");
  cmd->add_option("--threads", o->threads, "threads (0: all cores)")->capture_default_str()->check(CLI::NonNegativeNumber);
  return [cmd, o] { return *cmd ? run(*o) : -1; };
}

}  // namespace

static const Command kCommand(40, add_translate);

}  // namespace tfm::cli
