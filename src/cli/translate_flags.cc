// translate's flags and their help, in the order --help lists them: the search, sampling, the
// input and output files, the weights and what decoding records, and batching and resources.
#include "cli/translate_flags.h"

#include <charconv>
#include <cmath>
#include <map>

#include "cli/commands.h"
#include "core/error.h"

namespace tfm::cli {

namespace {

void add_search_flags(CLI::App& cmd, transformer::SearchOptions& s) {
  cmd.add_option("-b,--beam", s.beam_size, cat("beam size (1: greedy; at most ", transformer::kMaxBeamSize, ")"))
      ->capture_default_str();
  cmd.add_option("--length-penalty", s.length_penalty,
                  "alpha of the length normalization: scores divided by ((5+|Y|)/6)^alpha (gnmt) or |Y|^alpha (power)")
      ->capture_default_str();
  using Search = transformer::SearchOptions;
  cmd.add_option("--length-normalization", s.length_normalization,
                  "gnmt: ((5+|Y|)/6)^alpha (Wu et al.); power: |Y|^alpha (Marian's --normalize, CTranslate2, "
                  "Hugging Face)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, Search::LengthNormalization>{{"gnmt", Search::LengthNormalization::kGnmt},
                                                             {"power", Search::LengthNormalization::kPower}}))
      ->type_name("{gnmt, power}")
      ->default_str("gnmt");
  cmd.add_option("--beam-stop", s.beam_stop,
                  "first-k: a sentence ends once beam-size hypotheses have ended (fairseq); no-better-live: once "
                  "the best live one cannot beat the worst of beam-size ended ones (Hugging Face generate())")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Search::BeamStop>{
          {"first-k", Search::BeamStop::kFirstK}, {"no-better-live", Search::BeamStop::kNoBetterLive}}))
      ->type_name("{first-k, no-better-live}")
      ->default_str("first-k");
  cmd.add_option("--max-length-a", s.max_length_a, "at most a*source_tokens + b output tokens")->capture_default_str();
  cmd.add_option("--max-length-b", s.max_length_b, "see --max-length-a")->capture_default_str();
  cmd.add_option("--min-length", s.min_length,
                  "no end of sentence before this many output tokens, end of sentence included (benchmarks "
                  "force a length with --min-length = max length); where a sentence's maximum length is shorter, "
                  "the maximum wins")
      ->capture_default_str();
  cmd.add_flag("--limit-without-eos", s.limit_without_eos,
                "a translation that reaches the maximum length ends with its last token, without an end of "
                "sentence, as Hugging Face generate()'s max_new_tokens (default: one is appended and scored)");
  cmd.add_option("--n-best", s.n_best, "print this many hypotheses per line: 'i ||| text ||| score'")->capture_default_str();
}


void add_file_flags(CLI::App& cmd, TranslateFlags& o) {
  cmd.add_option("--target-prefix", o.prefix_path,
                  "a file of forced starts of the translations, one line per input line (an empty line: none; "
                  "token ids with --ids): each translation begins with its prefix, scored by teacher forcing, "
                  "and the search continues from it");
  cmd.add_flag("--scores", o.scores, "append each translation's normalized log-probability after a tab");
  cmd.add_flag("--ids", o.ids, "read and write space-separated token ids instead of text");
  cmd.add_option("--source-lang", o.translate.languages.source,
                  "a multilingual model's source language (its code, e.g. eng_Latn for NLLB, en for M2M-100): its "
                  "token starts each source, as the model's tokenizer puts it (not with --ids: ids are taken as given)");
  cmd.add_option("--target-lang", o.translate.languages.target,
                  "a multilingual model's target language (e.g. deu_Latn, de): its token is forced as the first "
                  "output token and left out of the text");
  cmd.add_flag("--stats", o.stats, "print sentences, output tokens and seconds of translation to stderr");
}

void add_decoding_flags(CLI::App& cmd, TranslateFlags& o) {
  auto* int8 = cmd.add_flag("--int8", o.int8,
                             "int8 weight products: faster (most with AVX-512 VNNI or AMX), slightly less exact");
  cmd.add_flag("--bf16", o.bf16,
                "bfloat16 products (inputs rounded to bfloat16, float32 sums, as train --bf16): on a GPU its tensor "
                "cores; on a CPU with AVX-512 BF16 weights packed in bfloat16, faster than the float32 "
                "default (transformer info --cpu: bf16); on other CPUs slower")
      ->excludes(int8);
  cmd.add_flag("--packed-weights,!--no-packed-weights", o.packed,
                "float32 weights packed once for decoding's products (default; faster; the layers' weights are "
                "then kept only in packed form, the output projection also as the embedding)");
  cmd.add_option("--shortlist", o.shortlist_path,
                  "score only the target tokens this shortlist (from `transformer shortlist`) selects for each "
                  "batch: faster, may change translations; --scores are then log-probabilities over the selected "
                  "tokens only");
  cmd.add_option("--attention", o.attention_path,
                  "write encoder-decoder attention as JSON lines: [layer][head][target][source] per sentence");
}

void add_batching_flags(CLI::App& cmd, TranslateFlags& o) {
  cmd.add_option("--batch-size", o.translate.batch_sentences,
                  cat("sentences decoded together (at most ", transformer::kMaxBatchSentences, ")"))
      ->capture_default_str();
  cmd.add_option("--parallel-batches", o.translate.parallel_batches,
                  "batches decoded at the same time, one thread each, at most --threads (more count as --threads; "
                  "0: one per thread when "
                  "a chunk of input lines has at least two batches per thread; 1: one batch at a time on all "
                  "threads). Each batch in flight holds its own decoding caches: more memory")
      ->capture_default_str();
  cmd.add_option("--max-input-tokens", o.translate.max_input_tokens,
                  cat("longer inputs are truncated, with a warning (at most ", transformer::kMaxInputTokens, ")"))
      ->capture_default_str();
  cmd.add_option("--max-memory", o.max_memory_gib,
                  "refuse, before starting, a translation whose decoding is estimated to need more than this many "
                  "GiB (default: 80% of the memory available at the start, the GPU's with --device cuda; 0: no limit)");
  cmd.add_option("--chunk-lines", o.chunk_lines,
                  "input lines read and translated together, sorted by length into batches (more: less padding; "
                  "Ctrl-C or SIGTERM lets the chunk in progress finish and be written, then stops)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  cmd.add_option("--threads", o.threads, "threads (0: all cores)")->capture_default_str()->check(thread_count());
  cmd.add_option("--device", o.device,
                  "where to translate: cpu, or cuda (cuda:0), the first NVIDIA GPU, in a build with the CUDA backend "
                  "(packed float32 weights there, plain with --no-packed-weights, or --bf16; no --int8)")
      ->capture_default_str();
}

}  // namespace

void add_sampling_flags(CLI::App& cmd, transformer::SearchOptions& s, std::string& seed) {
  cmd.add_option("--sampling-topk", s.sampling_topk,
                  "random sampling (back-translation) with --beam 1: draw each token among the K most probable "
                  "(0: no sampling; 1: greedy; -1: the whole vocabulary)")
      ->capture_default_str();
  cmd.add_option("--sampling-topp", s.sampling_topp,
                  "sampling: draw among the fewest most probable tokens whose probability reaches P, in (0, 1] "
                  "(nucleus sampling; applied after --sampling-topk; 1: off)")
      ->capture_default_str();
  cmd.add_option("--sampling-temperature", s.sampling_temperature,
                  "sampling: divide the logits by T before the softmax (> 0; < 1 sharper, > 1 flatter)")
      ->capture_default_str();
  cmd.add_option("--seed", seed,
                  "sampling: the random seed; a line's sample depends only on the seed, the options and the line "
                  "(and its prefix), not on threads, batches or its position")
      ->type_name("UINT64")
      ->capture_default_str();
}

void check_sampling_flags(const transformer::SearchOptions& s, const char* what) {
  TFM_CHECK(s.sampling_topk >= -1,
            "--sampling-topk must be -1 (the whole vocabulary), 0 (no sampling) or a number of tokens >= 1, got ",
            s.sampling_topk);
  TFM_CHECK(s.sampling_topp > 0 && s.sampling_topp <= 1, "--sampling-topp must be in (0, 1], got ", s.sampling_topp);
  TFM_CHECK(s.sampling_temperature > 0 && std::isfinite(s.sampling_temperature),
            "--sampling-temperature must be finite and > 0, got ", s.sampling_temperature);
  if (!s.sampling()) {
    const std::string set = s.sampling_topp != 1 ? cat("--sampling-topp ", s.sampling_topp)
                                                  : cat("--sampling-temperature ", s.sampling_temperature);
    TFM_CHECK(s.sampling_topp == 1 && s.sampling_temperature == 1, set,
              " applies only to sampling, which is off: give --sampling-topk (-1: the whole vocabulary) and --beam 1");
  } else {
    TFM_CHECK(s.beam_size == 1, "--sampling-topk ", s.sampling_topk,
              " draws one ", what, " per sentence: it needs --beam 1, got --beam ", s.beam_size, " (and --n-best ",
              s.n_best, ")");
  }
}

uint64_t parse_seed(const std::string& text) {
  uint64_t seed = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, seed);
  TFM_CHECK(!text.empty() && error == std::errc() && stop == end,
            "--seed must be an integer in [0, 18446744073709551615], got '", text, "'");
  return seed;
}

void add_translate_flags(CLI::App& cmd, TranslateFlags& o) {
  add_model_options(cmd, o.paths);
  cmd.add_option("-i,--input", o.input, "input file (default: stdin)");
  add_search_flags(cmd, o.translate.search);
  add_sampling_flags(cmd, o.translate.search, o.seed);
  add_file_flags(cmd, o);
  add_decoding_flags(cmd, o);
  add_batching_flags(cmd, o);
}

}  // namespace tfm::cli
