// transformer embed -m MODEL: sentences on stdin (or --input) → one JSON array per line on stdout,
// in order: the sentence's embedding by the model's encoder (transformer::Encoder), pooled as
// --pooling says (none: an array of every token's vector), each number printed so that it reads
// back as the same float32.
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "cli/streams.h"
#include "cli/translate_input.h"
#include "core/error.h"
#include "transformer/encoder.h"

namespace tfm::cli {

namespace {

struct EmbedFlags {
  ModelPaths paths;
  std::string input, pooling;  // "": the model's default
  transformer::EmbedOptions embed;
  CLI::Option* normalize_flag = nullptr;
  bool normalize = false, ids = false, int8 = false, packed = true;
  int64_t threads = 0, chunk_lines = 10000;
  std::string device = transformer::EncoderOptions{}.device;
};

void add_embed_flags(CLI::App& cmd, EmbedFlags& o) {
  add_model_options(cmd, o.paths);
  cmd.add_option("-i,--input", o.input, "input file (default: stdin)");
  cmd.add_option("--pooling", o.pooling,
                 "how a sentence's token vectors become one: mean (padding never counts), cls (the first token's), "
                 "last (the last token's), max (each dimension's largest), none (every token's vector: an array of "
                 "arrays); default: the model's (a sentence-transformers import records its own), else mean")
      ->check(CLI::IsMember({"mean", "cls", "last", "max", "none"}));
  o.normalize_flag = cmd.add_flag("--normalize,!--no-normalize", o.normalize,
                                  "divide each vector by its L2 norm (unit length); default: the model's (a "
                                  "sentence-transformers import with a Normalize module normalizes), else not");
  cmd.add_flag("--ids", o.ids,
               "read space-separated token ids, taken exactly as given (no beginning or end of sentence added)");
  cmd.add_flag("--int8", o.int8, "int8 weights (faster, slightly less exact)");
  cmd.add_flag("--packed-weights,!--no-packed-weights", o.packed, "pack the float32 weights once for the products")
      ->capture_default_str();
  cmd.add_option("--batch-size", o.embed.batch_sentences,
                 cat("sentences encoded together (at most ", transformer::kMaxBatchSentences, ")"))
      ->capture_default_str();
  cmd.add_option("--max-input-tokens", o.embed.max_input_tokens,
                 cat("a line with more tokens (specials included) is refused, naming it (at most ",
                     transformer::kMaxInputTokens, ")"))
      ->capture_default_str();
  cmd.add_option("--chunk-lines", o.chunk_lines, "lines read, embedded and written at a time")->capture_default_str();
  cmd.add_option("--threads", o.threads, "threads (0: all cores)")->capture_default_str()->check(thread_count());
  cmd.add_option("--device", o.device, "where the model runs: cpu, or cuda (cuda:0) in a build with CUDA")
      ->capture_default_str();
}

// One vector as a JSON array: "%.9g" reads back as the same float32.
void print_vector(const float* v, int64_t n, int64_t line) {
  std::fputc('[', stdout);
  for (int64_t d = 0; d < n; ++d) {
    TFM_CHECK(std::isfinite(v[d]), "line ", line, ": the embedding has a value that is not finite (", v[d],
              "): the model's weights may be damaged");
    std::printf(d ? ",%.9g" : "%.9g", static_cast<double>(v[d]));
  }
  std::fputc(']', stdout);
}

// A chunk's embeddings on standard output, one line each, with the warnings of its lines.
// `specials`: how many ids an empty text encodes to (−1 for --ids); per_token: pooling none.
void write_chunk(const std::vector<transformer::Embedding>& out, const std::vector<std::string>& lines, int64_t first,
                 int64_t specials, bool per_token) {
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t n = first + static_cast<int64_t>(i);
    for (const std::string& w : transformer::repair_warnings(out[i].repairs, cat("line ", n)))
      std::fprintf(stderr, "warning: %s\n", w.c_str());
    // A line that was not empty but has no tokens (the vocabulary's normalization removes U+FFFD,
    // control and zero-width characters) is embedded from the specials alone, as an empty line is,
    // but not silently.
    if (specials >= 0 && out[i].ids.size() == static_cast<size_t>(specials) &&
        !transformer::clean_input(lines[i]).text.empty())
      std::fprintf(stderr, "warning: line %lld has no tokens (the vocabulary's normalization removes U+FFFD, control "
                   "and zero-width characters); its embedding is the specials' alone\n", static_cast<long long>(n));
    const transformer::Embedding& e = out[i];
    if (!per_token) {
      print_vector(e.values.data(), e.dim, n);
    } else {
      std::fputc('[', stdout);
      for (int64_t r = 0; r < e.rows; ++r) {
        if (r) std::fputc(',', stdout);
        print_vector(e.values.data() + r * e.dim, e.dim, n);
      }
      std::fputc(']', stdout);
    }
    std::fputc('\n', stdout);
  }
  check_stdout();
}

int run(EmbedFlags& o) {
  if (!o.pooling.empty()) o.embed.pooling = transformer::parse_pooling(o.pooling);
  if (o.normalize_flag->count() > 0) o.embed.normalize = o.normalize;
  o.embed.threads = static_cast<int>(o.threads);
  TFM_CHECK(o.chunk_lines >= 1, "--chunk-lines must be >= 1, got ", o.chunk_lines);
  try {
    o.embed.validate();
  } catch (const Error& e) {
    throw Error(cat(e.what(), " (--batch-size, --max-input-tokens)"));
  }
  transformer::EncoderOptions lo;
  lo.vocab = o.paths.vocab;
  lo.need_vocab = !o.ids;
  lo.verify = !o.paths.no_verify;
  using W = transformer::EncoderOptions::Weights;
  lo.weights = o.int8 ? W::kInt8 : o.packed ? W::kPacked : W::kPlain;
  lo.threads = o.embed.threads;
  lo.device = o.device;
  const transformer::Encoder encoder(o.paths.model, lo);
  print_notes(encoder.load_notes());
  if (o.input.empty()) check_stdin();
  Input input(o.input);
  const bool per_token = encoder.resolve(o.embed).pooling == transformer::Pooling::kNone;
  const int64_t specials = o.ids ? -1 : static_cast<int64_t>(encoder.encode("").size());
  std::vector<std::string> chunk;
  int64_t lines = 0;
  while (input.read_chunk(o.chunk_lines, chunk)) {
    const int64_t first = lines + 1;
    lines += static_cast<int64_t>(chunk.size());
    std::vector<transformer::Embedding> out;
    try {
      if (!o.ids) {
        out = encoder.embed(chunk, o.embed);
      } else {
        std::vector<std::vector<int32_t>> ids;
        std::vector<transformer::Repairs> repairs;
        for (size_t i = 0; i < chunk.size(); ++i) {
          const transformer::CleanText clean = transformer::clean_input(chunk[i]);
          ids.push_back(encoder.parse_ids(clean.text, first + static_cast<int64_t>(i)));
          repairs.push_back(clean.repairs);
        }
        out = encoder.embed_ids(ids, o.embed);
        for (size_t i = 0; i < out.size(); ++i) out[i].repairs = repairs[i];
      }
    } catch (const transformer::SentenceError& e) {
      throw Error(cat("line ", first + e.index(), ": ", e.problem()));
    }
    write_chunk(out, chunk, first, specials, per_token);
  }
  return 0;
}

Action add_embed(CLI::App& app) {
  auto o = std::make_shared<EmbedFlags>();
  CLI::App* cmd = app.add_subcommand(
      "embed", "embed sentences from stdin (or --input) with a model's encoder: one JSON array per line on stdout");
  add_embed_flags(*cmd, *o);
  return [cmd, o] {
    if (!*cmd) return -1;
    return run(*o);
  };
}

}  // namespace

static const Command kCommand(47, add_embed);

}  // namespace tfm::cli
