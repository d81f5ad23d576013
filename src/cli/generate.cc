// transformer generate -m MODEL: prompts on stdin (or --input), one a line → each continuation on
// stdout, one a line, by a decoder-only model (transformer::Generator). With --stream each token is
// printed as it is generated. Input, signals and sampling flags are translate's (cli/translate_*).
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "cli/streams.h"
#include "cli/translate_flags.h"
#include "cli/translate_input.h"
#include "cli/translate_stop.h"
#include "core/error.h"
#include "transformer/generator.h"

namespace tfm::cli {

namespace {

struct GenerateFlags {
  ModelPaths paths;
  std::string input;
  transformer::GenerationOptions gen;
  std::string seed = "0";
  bool seed_given = false, ids = false, stream = false, int8 = false;
  int64_t threads = 0, chunk_lines = 64;
};

void add_generate_flags(CLI::App& cmd, GenerateFlags& o) {
  add_model_options(cmd, o.paths);
  cmd.add_option("-i,--input", o.input, "prompts, one a line (default: stdin)");
  transformer::SearchOptions& s = o.gen.search;
  cmd.add_option("-b,--beam", s.beam_size, "beam size (1: greedy)")->capture_default_str();
  cmd.add_option("--length-penalty", s.length_penalty, "alpha of beam search's length normalization")
      ->capture_default_str();
  cmd.add_option("--max-new-tokens", o.gen.max_new_tokens, "at most this many tokens after each prompt")
      ->capture_default_str();
  cmd.add_option("--min-new-tokens", o.gen.min_new_tokens, "no end of sequence before this many tokens")
      ->capture_default_str();
  add_sampling_flags(cmd, s, o.seed);
  cmd.add_flag("--include-prompt", o.gen.include_prompt, "print each prompt before its continuation");
  cmd.add_flag("--ids", o.ids, "read and write space-separated token ids (prompts taken exactly as given)");
  cmd.add_flag("--stream", o.stream, "print each token as it is generated (greedy search or sampling)");
  cmd.add_flag("--int8", o.int8, "int8 weights (faster, slightly less exact)");
  cmd.add_option("--batch-size", o.gen.batch_sentences, "prompts generated together")->capture_default_str();
  cmd.add_option("--max-input-tokens", o.gen.max_input_tokens, "longer prompts are refused")->capture_default_str();
  cmd.add_option("--threads", o.threads, "threads (0: all cores)")->capture_default_str()->check(thread_count());
}

// The options the flags give, checked naming them before any input is read.
transformer::GenerationOptions generation_options(const GenerateFlags& o) {
  transformer::GenerationOptions g = o.gen;
  g.search.seed = parse_seed(o.seed);
  check_sampling_flags(g.search, "continuation");
  TFM_CHECK(!o.seed_given || g.search.sampling(), "--seed ", o.seed,
            " applies only to sampling, which is off: give --sampling-topk (-1: the whole vocabulary)");
  TFM_CHECK(!o.stream || g.search.beam_size == 1, "--stream prints tokens as greedy search or sampling chooses "
            "them: it needs --beam 1, got --beam ", g.search.beam_size);
  g.search.return_scores = false;
  g.validate();
  return g;
}

// Prints one prompt's tokens as they come: ids after a space, or the text decoded so far past what
// is already printed (a piece's text can depend on the next one; it waits until it does not).
class TokenPrinter {
 public:
  TokenPrinter(const transformer::Generator& g, bool ids, std::vector<int32_t> base)
      : g_(g), ids_(ids), tokens_(std::move(base)) {
    if (!tokens_.empty()) show();
  }
  void add(int32_t id) {
    tokens_.push_back(id);
    show();
  }

 private:
  void show() {
    std::string text;
    if (ids_) {
      for (int32_t id : tokens_) text += (text.empty() ? "" : " ") + std::to_string(id);
    } else {
      text = g_.decode(tokens_);
    }
    if (text.compare(0, shown_.size(), shown_) != 0) return;
    std::fputs(text.c_str() + shown_.size(), stdout);
    shown_ = std::move(text);
    check_stdout();  // flushed per token; a full disk stops the run here
  }
  const transformer::Generator& g_;
  const bool ids_;
  std::vector<int32_t> tokens_;
  std::string shown_;
};

class Generating {
 public:
  Generating(const GenerateFlags& o, const transformer::Generator& g, const transformer::GenerationOptions& go)
      : o_(o), g_(g), go_(go) {}

  void all(Input& input) {
    std::vector<std::string> chunk;
    while (input.read_chunk(o_.stream ? 1 : o_.chunk_lines, chunk)) {
      const int64_t first = lines + 1;
      lines += static_cast<int64_t>(chunk.size());
      if (o_.stream) stream(chunk[0], first);
      else write(run(chunk, first, {}), first);
      if (stop_signal() != 0) break;
    }
  }
  int64_t lines = 0;

 private:
  std::vector<transformer::Generation> run(const std::vector<std::string>& chunk, int64_t first,
                                           const transformer::TokenCallback& on_token) const {
    try {
      if (!o_.ids) return g_.generate_batch(chunk, go_, on_token);
      std::vector<std::vector<int32_t>> prompts;
      for (size_t i = 0; i < chunk.size(); ++i) {
        const transformer::CleanText clean = transformer::clean_input(chunk[i]);
        prompts.push_back(g_.parse_ids(clean.text, first + static_cast<int64_t>(i)));
      }
      return g_.generate_batch_ids(prompts, go_, on_token);
    } catch (const transformer::SentenceError& e) {
      throw Error(cat("line ", first + e.index(), ": ", e.problem()));
    }
  }
  void warn(const transformer::Generation& g, int64_t line) const {
    for (const std::string& w : transformer::repair_warnings(g.repairs, cat("line ", line)))
      std::fprintf(stderr, "warning: %s\n", w.c_str());
  }
  std::string line_of(const transformer::Hypothesis& h) const {
    if (!o_.ids) return h.text;
    std::string out;
    for (int32_t id : h.ids) out += (out.empty() ? "" : " ") + std::to_string(id);
    return out;
  }
  void write(const std::vector<transformer::Generation>& out, int64_t first) const {
    for (size_t i = 0; i < out.size(); ++i) {
      warn(out[i], first + static_cast<int64_t>(i));
      std::fputs((line_of(out[i].best()) + "\n").c_str(), stdout);
    }
    check_stdout();
  }
  // One prompt, its tokens printed as they come (the prompt first with --include-prompt).
  void stream(const std::string& line, int64_t n) const {
    std::vector<int32_t> base;
    if (go_.include_prompt) {
      if (o_.ids) base = g_.parse_ids(transformer::clean_input(line).text, n);
      else base = g_.encode(line);
      if (!o_.ids && g_.bos_id() >= 0) base.insert(base.begin(), g_.bos_id());
      if (base.empty() && g_.bos_id() >= 0) base.push_back(g_.bos_id());
    }
    TokenPrinter printer(g_, o_.ids, base);
    const auto out = run({line}, n, [&](int64_t, int32_t id) { printer.add(id); });
    std::fputs("\n", stdout);
    warn(out[0], n);
    check_stdout();
  }

  const GenerateFlags& o_;
  const transformer::Generator& g_;
  const transformer::GenerationOptions& go_;
};

int run(const GenerateFlags& o) {
  const transformer::GenerationOptions go = generation_options(o);
  transformer::GeneratorOptions lo;
  lo.vocab = o.paths.vocab;
  lo.need_vocab = !o.ids;
  lo.verify = !o.paths.no_verify;
  lo.weights = o.int8 ? transformer::GeneratorOptions::Weights::kInt8 : transformer::GeneratorOptions::Weights::kPacked;
  lo.threads = static_cast<int>(o.threads);
  const transformer::Generator generator(o.paths.model, lo);
  print_notes(generator.load_notes());
  if (o.input.empty()) check_stdin();
  Input input(o.input);
  Generating generating(o, generator, go);
  {
    const StopOnSignals stop_on_signals(input.fd);
    generating.all(input);
  }
  if (const int signal = stop_signal(); signal != 0)
    return end_by_signal(signal, {generating.lines, o.input, input.is_file, "", "", false});
  return 0;
}

Action add_generate(CLI::App& app) {
  auto o = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand("generate", "continue prompts from stdin (or --input) with a decoder-only model");
  add_generate_flags(*cmd, *o);
  return [cmd, o] {
    if (!*cmd) return -1;
    o->seed_given = cmd->count("--seed") > 0;
    return run(*o);
  };
}

}  // namespace

static const Command kCommand(41, add_generate);

}  // namespace tfm::cli
