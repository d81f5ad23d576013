// transformer translate -m MODEL: sentences on stdin (or --input) → translations on stdout, in order.
// The flags read into the library's options (checked naming the flags), then the input translated
// chunk by chunk (cli/translate_input.h), each chunk written as it is done (cli/translate_output.h).
#include <charconv>
#include <chrono>
#include <cmath>
#include <memory>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "cli/streams.h"
#include "cli/translate_flags.h"
#include "cli/translate_input.h"
#include "cli/translate_output.h"
#include "cli/translate_stop.h"
#include "core/error.h"
#include "io/atomic_file.h"

namespace tfm::cli {

namespace {

// The translation options the flags give, checked before any input is read (bad options fail at once).
transformer::TranslateOptions translate_options(const TranslateFlags& o) {
  TFM_CHECK(o.max_memory_gib == -1 || (o.max_memory_gib >= 0 && o.max_memory_gib < 1e9),
            "--max-memory must be a number of GiB >= 0 (0: no limit; -1, the default: 80% of the memory available), "
            "got ", o.max_memory_gib);
  transformer::TranslateOptions to = o.translate;
  if (o.max_memory_gib >= 0) to.max_memory = static_cast<int64_t>(o.max_memory_gib * (1 << 30));
  to.search.seed = parse_seed(o.seed);
  check_sampling_flags(to.search, "translation");
  TFM_CHECK(!o.seed_given || to.search.sampling(), "--seed ", o.seed,
            " applies only to sampling, which is off: give --sampling-topk (-1: the whole vocabulary) and --beam 1 "
            "(search needs no seed: the same options give the same output)");
  to.validate();
  to.search.record_attention = !o.attention_path.empty();
  // Scores only where printed: greedy search is faster without them (SearchOptions::return_scores).
  to.search.return_scores = o.scores || to.search.n_best > 1;
  return to;
}

// How the model is loaded: its vocabulary, weight form, shortlist, threads and device.
transformer::TranslatorOptions translator_options(const TranslateFlags& o) {
  transformer::TranslatorOptions lo;
  lo.vocab = o.paths.vocab;
  lo.need_vocab = !o.ids || !o.translate.languages.empty();  // the language codes are in the vocabulary
  lo.verify = !o.paths.no_verify;
  TFM_CHECK(o.packed || (!o.int8 && !o.bf16), "--no-packed-weights is about float32 weights; ",
            o.int8 ? "--int8" : "--bf16", " holds its own (leave out one of the two)");
  using W = transformer::TranslatorOptions::Weights;
  lo.weights = o.int8 ? W::kInt8 : o.bf16 ? W::kBf16 : o.packed ? W::kPacked : W::kPlain;
  lo.shortlist = o.shortlist_path;
  lo.threads = static_cast<int>(o.threads);
  lo.device = o.device;
  return lo;
}

// --attention names a file that is none of the inputs (nor standard output).
void check_attention_path(const TranslateFlags& o) {
  TFM_CHECK(o.attention_path != "-", "--attention '-': standard output carries the translations; give the "
            "attention records a file name");
  if (!o.attention_path.empty())
    check_not_an_input(o.attention_path, "--attention",
                       {{"--input", o.input}, {"--model", o.paths.model}, {"--vocab", o.paths.vocab},
                        {"--target-prefix", o.prefix_path}, {"--shortlist", o.shortlist_path}});
}

// One run over the input: chunks read, translated and written, counting lines, output tokens and
// the seconds spent in the translator (loading, reading and writing excluded).
class Translating {
 public:
  Translating(const TranslateFlags& o, const transformer::Translator& translator,
              const transformer::TranslateOptions& to, Input& input, const Prefixes& prefixes)
      : o_(o), translator_(translator), to_(to), input_(input), prefixes_(prefixes) {}

  // Translates everything, streaming the attention records into `attention` (or nowhere).
  void all(std::ostream* attention) {
    const OutputFormat format{o_.ids, o_.scores, to_.search.n_best, to_.max_input_tokens, attention, o_.attention_path};
    std::vector<std::string> chunk;
    while (input_.read_chunk(o_.chunk_lines, chunk)) {
      const int64_t first = lines + 1;
      lines += static_cast<int64_t>(chunk.size());
      // A live input's end only where it is known without waiting (else the check after the loop).
      const bool input_ended = input_.ended();
      const std::vector<std::string> prefixes = prefixes_.of_lines(first, lines, input_ended, input_);
      const auto start = std::chrono::steady_clock::now();
      const std::vector<transformer::Translation> out = translate_chunk(chunk, prefixes, first);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      warn_repairs(out, first);
      for (const transformer::Translation& t : out)
        if (!t.hypotheses.empty()) output_tokens += static_cast<int64_t>(t.hypotheses[0].ids.size());
      write_chunk(translator_, out, chunk, first, format);
      if (stop_signal() != 0) break;  // SIGINT or SIGTERM: the lines read are written (StopOnSignals)
    }
    if (stop_signal() == 0) prefixes_.check_end(lines);
  }

  int64_t lines = 0, output_tokens = 0;
  double seconds = 0;

 private:
  // A chunk's translations; a sentence's error is named by its line (the library counts from 0 in
  // the chunk).
  std::vector<transformer::Translation> translate_chunk(const std::vector<std::string>& chunk,
                                                        const std::vector<std::string>& prefixes, int64_t first) const {
    try {
      if (!o_.ids) return translator_.translate(chunk, to_, prefixes);
      const IdLines ids = parse_id_lines(translator_, chunk, prefixes, first, o_.prefix_path);
      std::vector<transformer::Translation> out = translator_.translate_ids(ids.sources, to_, ids.prefixes);
      for (size_t i = 0; i < out.size(); ++i) {
        out[i].repairs = ids.repairs[i];
        if (prefixes_.given()) out[i].prefix_repairs = ids.prefix_repairs[i];
      }
      return out;
    } catch (const transformer::SentenceError& e) {
      throw Error(cat("line ", first + e.index(), ": ", e.problem()));
    }
  }

  const TranslateFlags& o_;
  const transformer::Translator& translator_;
  const transformer::TranslateOptions& to_;
  Input& input_;
  const Prefixes& prefixes_;
};

int run(const TranslateFlags& o) {
  const transformer::TranslateOptions to = translate_options(o);
  const transformer::TranslatorOptions lo = translator_options(o);
  check_attention_path(o);
  const transformer::Translator translator(o.paths.model, lo);
  print_notes(translator.load_notes());
  if (o.input.empty()) check_stdin();
  Input input(o.input);
  const Prefixes prefixes(o.prefix_path, input);
  Translating translating(o, translator, to, input, prefixes);
  // The attention records go to a temporary file beside --attention, renamed over it once every
  // line is translated: a run that fails leaves an earlier file of that name as it was.
  {
    const StopOnSignals stop_on_signals(input.fd);
    if (o.attention_path.empty()) translating.all(nullptr);
    else write_file_atomic(o.attention_path, [&](std::ostream& out) { translating.all(&out); });
  }
  if (o.stats) print_stats(translating.lines, translating.output_tokens, translating.seconds);
  if (const int signal = stop_signal(); signal != 0)
    return end_by_signal(signal, {translating.lines, o.input, input.is_file, o.prefix_path, o.attention_path,
                                  to.search.n_best > 1});
  return 0;
}

Action add_translate(CLI::App& app) {
  auto o = std::make_shared<TranslateFlags>();
  CLI::App* cmd = app.add_subcommand("translate", "translate sentences from stdin (or --input) to stdout");
  add_translate_flags(*cmd, *o);
  return [cmd, o] {
    if (!*cmd) return -1;
    o->seed_given = cmd->count("--seed") > 0;
    return run(*o);
  };
}

}  // namespace

static const Command kCommand(40, add_translate);

}  // namespace tfm::cli
