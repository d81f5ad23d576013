// transformer translate -m MODEL: sentences on stdin (or --input) → translations on stdout, in order.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>

#include <ext/stdio_filebuf.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "cli/streams.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "transformer/text.h"
#include "transformer/translator.h"

namespace tfm::cli {

namespace {

struct Options {
  ModelPaths paths;
  std::string input, attention_path, shortlist_path, prefix_path;
  transformer::TranslateOptions translate;
  bool scores = false, ids = false, int8 = false, bf16 = false, stats = false, packed = true;
  int64_t threads = 0, chunk_lines = 10000;
  std::string device = "cpu";
  double max_memory_gib = -1;  // -1: automatic
  std::string seed = "0";      // SearchOptions::seed, parsed as an unsigned 64-bit integer
  bool seed_given = false;     // --seed was on the command line
};

// The input (standard input or --input) on its file descriptor, buffered, able to say whether a
// whole line is ready without blocking. It closes the descriptor when done.
class InputBuffer : public __gnu_cxx::stdio_filebuf<char> {
 public:
  explicit InputBuffer(int fd) : __gnu_cxx::stdio_filebuf<char>(fd, std::ios::in, 1 << 16), fd_(fd) {}
  // Whether a line, or the end of input, can be read without waiting, after up to `wait_ms` for it.
  bool line_ready(int wait_ms) {
    if (std::find(gptr(), egptr(), '\n') != egptr()) return true;  // a whole line already buffered
    pollfd p{fd_, POLLIN, 0};
    // Readable (more of a line may come, or its end), ended (POLLHUP), or an error getline meets.
    return ::poll(&p, 1, wait_ms) != 0;
  }

 private:
  int fd_;
};

// Ctrl-C (SIGINT) or SIGTERM while translating: the lines already read are translated and written,
// no more input is read, translate says which line to go on from, and then it ends by the signal
// (status 130 or 143; a shell script running it stops as for any Ctrl-C). Before, the signal
// killed it at once, losing the finished translations of its chunk (up to --chunk-lines lines). A
// second SIGINT or SIGTERM ends it at once: the first gives both their default action back.
std::atomic<int> g_stop_signal{0};
// /dev/null, which the handler puts over the input's descriptor, so that a read waiting there
// (a terminal, a pipe, a FIFO) ends; and which of the two signals the handler was installed for.
volatile sig_atomic_t g_null_fd = -1, g_input_fd = -1, g_caught_int = 0, g_caught_term = 0;

void on_stop_signal(int signal) {
  int none = 0;
  if (!g_stop_signal.compare_exchange_strong(none, signal)) return;
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  if (g_caught_int) sigaction(SIGINT, &default_action, nullptr);
  if (g_caught_term) sigaction(SIGTERM, &default_action, nullptr);
  if (g_null_fd >= 0 && g_input_fd >= 0) ::dup2(g_null_fd, g_input_fd);
  static const char kMessage[] =
      "\nstopping: the lines read so far are being translated and written (again to stop at once, losing them)\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
}

// The handlers for one run, for the input on descriptor `input_fd`; the previous ones come back
// after it, however it ends.
class StopOnSignals {
 public:
  explicit StopOnSignals(int input_fd) {
    g_stop_signal = 0;
    g_input_fd = input_fd;
    g_null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    // Neither signal interrupts the handler: one that comes meanwhile waits, then takes the
    // default action the handler gave it back. A write to a full pipe that the signal interrupts
    // goes on (without SA_RESTART it would fail, and the output with it).
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, SIGINT);
    sigaddset(&action.sa_mask, SIGTERM);
    action.sa_flags = SA_RESTART;
    // A signal ignored on entry stays ignored (a job started in the background by a script
    // ignores SIGINT, so that Ctrl-C in the terminal stops the script, not the job).
    sigaction(SIGINT, nullptr, &old_int_);
    sigaction(SIGTERM, nullptr, &old_term_);
    g_caught_int = old_int_.sa_handler != SIG_IGN;
    g_caught_term = old_term_.sa_handler != SIG_IGN;
    if (g_caught_int) sigaction(SIGINT, &action, nullptr);
    if (g_caught_term) sigaction(SIGTERM, &action, nullptr);
  }
  ~StopOnSignals() {
    if (g_caught_int) sigaction(SIGINT, &old_int_, nullptr);
    if (g_caught_term) sigaction(SIGTERM, &old_term_, nullptr);
    g_caught_int = 0;
    g_caught_term = 0;
    g_input_fd = -1;
    if (g_null_fd >= 0) ::close(g_null_fd);
    g_null_fd = -1;
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

// How long a chunk of a live input (standard input, a FIFO) waits for its next line, and at most
// for its last, before it is translated as it is.
constexpr int kLineWaitMs = 50, kChunkWaitMs = 1000;

// Reads up to `max` lines; returns false at end of input with nothing read. From a live input
// (`live` given: standard input, or an --input that is not a regular file), the chunk also
// ends when no next line comes within kLineWaitMs, or kChunkWaitMs after its first line: lines
// typed, or written a few at a time by another program, are translated as they come, not once `max`
// of them have come or the input has ended (which held back every translation of a session). A
// file or a fast pipe still fills whole chunks.
bool read_chunk(std::istream& in, int64_t max, std::vector<std::string>& lines, InputBuffer* live = nullptr) {
  lines.clear();
  std::string line;
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<int64_t>(lines.size()) < max && g_stop_signal == 0 && std::getline(in, line)) {
    // A line the stop signal cut short (its read met the end that the handler put there) is not a
    // line of the input: it is left for the run that goes on.
    if (g_stop_signal != 0 && in.eof()) break;
    lines.push_back(line);
    if (live == nullptr) continue;
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    if (waited.count() >= kChunkWaitMs) break;
    if (!live->line_ready(std::min<int>(kLineWaitMs, kChunkWaitMs - static_cast<int>(waited.count())))) break;
  }
  return !lines.empty();
}

// The lines of a file as std::getline reads them (a last line without a newline counts).
int64_t count_lines(std::istream& in) {
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// The sampling options, checked naming their flags (TranslateOptions::validate checks them again).
void check_sampling_flags(const transformer::SearchOptions& s) {
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
              " draws one translation per sentence: it needs --beam 1, got --beam ", s.beam_size, " (and --n-best ",
              s.n_best, ")");
  }
}

// --seed: an unsigned 64-bit integer, written in decimal.
uint64_t parse_seed(const std::string& text) {
  uint64_t seed = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, seed);
  TFM_CHECK(!text.empty() && error == std::errc() && stop == end,
            "--seed must be an integer in [0, 18446744073709551615], got '", text, "'");
  return seed;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  return out;
}

// One attention record of --attention: {"line", "source", "target", "attention"}.
nlohmann::json attention_record(const transformer::Translator& t, const transformer::Translation& r, int64_t line,
                                bool ids) {
  nlohmann::json j = {{"line", line}};
  auto token = [&](int32_t id) { return ids ? std::to_string(id) : t.piece(id); };
  std::vector<std::string> src, tgt;
  for (int32_t id : r.source_ids) src.push_back(token(id));
  src.push_back("</s>");
  if (!r.hypotheses.empty()) {
    const transformer::Hypothesis& h = r.hypotheses[0];
    for (int32_t id : h.ids) tgt.push_back(token(id));
    tgt.push_back("</s>");
    const transformer::Attention& a = h.attention;  // [layers][heads][target][source]
    nlohmann::json layers = nlohmann::json::array();
    for (int64_t l = 0; l < a.layers; ++l) {
      nlohmann::json heads = nlohmann::json::array();
      for (int64_t hd = 0; hd < a.heads; ++hd) {
        nlohmann::json rows = nlohmann::json::array();
        for (int64_t i = 0; i < a.target_length; ++i) {
          const float* row = &a.weights[static_cast<size_t>(((l * a.heads + hd) * a.target_length + i) * a.source_length)];
          rows.push_back(std::vector<float>(row, row + a.source_length));
        }
        heads.push_back(rows);
      }
      layers.push_back(heads);
    }
    j["attention"] = layers;
  }
  j["source"] = src;
  j["target"] = tgt;
  return j;
}

int run(Options o) {
  TFM_CHECK(o.max_memory_gib == -1 || (o.max_memory_gib >= 0 && o.max_memory_gib < 1e9),
            "--max-memory must be a number of GiB >= 0 (0: no limit; -1, the default: 80% of the memory available), "
            "got ", o.max_memory_gib);
  if (o.max_memory_gib >= 0) o.translate.max_memory = static_cast<int64_t>(o.max_memory_gib * (1 << 30));
  o.translate.search.seed = parse_seed(o.seed);
  check_sampling_flags(o.translate.search);
  TFM_CHECK(!o.seed_given || o.translate.search.sampling(), "--seed ", o.seed,
            " applies only to sampling, which is off: give --sampling-topk (-1: the whole vocabulary) and --beam 1 "
            "(search needs no seed: the same options give the same output)");
  o.translate.validate();  // before reading any input: bad options fail at once
  transformer::TranslatorOptions lo;
  lo.vocab = o.paths.vocab;
  lo.need_vocab = !o.ids;
  lo.verify = !o.paths.no_verify;
  TFM_CHECK(o.packed || (!o.int8 && !o.bf16), "--no-packed-weights is about float32 weights; ",
            o.int8 ? "--int8" : "--bf16", " holds its own (leave out one of the two)");
  using W = transformer::TranslatorOptions::Weights;
  lo.weights = o.int8 ? W::kInt8 : o.bf16 ? W::kBf16 : o.packed ? W::kPacked : W::kPlain;
  lo.shortlist = o.shortlist_path;
  lo.threads = static_cast<int>(o.threads);
  lo.device = o.device;
  TFM_CHECK(o.attention_path != "-", "--attention '-': standard output carries the translations; give the "
            "attention records a file name");
  if (!o.attention_path.empty())
    check_not_an_input(o.attention_path, "--attention",
                       {{"--input", o.input}, {"--model", o.paths.model}, {"--vocab", o.paths.vocab},
                        {"--target-prefix", o.prefix_path}, {"--shortlist", o.shortlist_path}});
  const transformer::Translator translator(o.paths.model, lo);
  print_notes(translator.load_notes());
  if (o.input.empty()) check_stdin();
  // The input through a buffer that can say whether more is ready (read_chunk): standard input and
  // an --input that is not a regular file (a FIFO, /dev/stdin) are read live, line by line as they
  // come; a regular file fills whole chunks.
  const bool input_is_file = !o.input.empty() && std::filesystem::is_regular_file(o.input);
  const int input_fd = o.input.empty() ? STDIN_FILENO : open_input_fd(o.input, "--input");
  InputBuffer input_buffer(input_fd);
  std::istream in(&input_buffer);
  InputBuffer* const waits = input_is_file ? nullptr : &input_buffer;
  // --target-prefix: one line per input line, read whole; a count that differs is refused before
  // anything is translated when the input is a file (counted first), else as soon as it shows.
  const bool with_prefixes = !o.prefix_path.empty();
  std::vector<std::string> prefix_lines;
  if (with_prefixes) {
    std::ifstream prefix_file;
    open_input(prefix_file, o.prefix_path, "--target-prefix");
    for (std::string line; std::getline(prefix_file, line);) prefix_lines.push_back(line);
    TFM_CHECK(!prefix_file.bad(), "cannot read --target-prefix '", o.prefix_path, "'");
  }
  const auto prefix_count = static_cast<int64_t>(prefix_lines.size());
  auto mismatch = [&](int64_t input_lines) {
    return Error(cat("--target-prefix '", o.prefix_path, "' has ", prefix_count, " lines but the input has ",
                     input_lines, ": give one prefix per input line (an empty line for none)"));
  };
  if (with_prefixes && input_is_file) {
    std::ifstream count(o.input, std::ios::binary);
    const int64_t input_lines = count_lines(count);
    if (input_lines != prefix_count) throw mismatch(input_lines);
  }
  transformer::TranslateOptions to = o.translate;
  to.search.record_attention = !o.attention_path.empty();
  // Scores only where printed: greedy search is faster without them (SearchOptions::return_scores).
  to.search.return_scores = o.scores || to.search.n_best > 1;
  std::vector<std::string> lines;
  int64_t line_number = 0, output_tokens = 0;
  double seconds = 0;  // in the translator: loading, reading and writing excluded
  bool input_ended = false;
  // Translates everything, streaming the attention records into `attention` (or nowhere).
  auto translate_all = [&](std::ostream* attention) {
  while (read_chunk(in, o.chunk_lines, lines, waits)) {
    const int64_t first = line_number + 1;
    line_number += static_cast<int64_t>(lines.size());
    // A live input's end only where it is known without waiting (else the check after the loop);
    // not once a stop signal has put /dev/null over the input (before or during the peek).
    input_ended = g_stop_signal == 0 && (waits == nullptr || waits->line_ready(0)) &&
                  in.peek() == std::char_traits<char>::eof() && g_stop_signal == 0;
    std::vector<std::string> prefixes;
    if (with_prefixes) {
      if (line_number > prefix_count) throw mismatch(line_number + count_lines(in));
      if (input_ended && line_number < prefix_count) throw mismatch(line_number);
      prefixes.assign(prefix_lines.begin() + (first - 1), prefix_lines.begin() + line_number);
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<transformer::Translation> out;
    try {  // a sentence's error, named by its line (the library counts from 0 in the chunk)
    if (o.ids) {
      std::vector<std::vector<int32_t>> sources, prefix_ids;
      std::vector<transformer::Repairs> repairs, prefix_repairs;
      for (size_t i = 0; i < lines.size(); ++i) {
        const transformer::CleanText clean = transformer::clean_input(lines[i]);
        sources.push_back(translator.parse_ids(clean.text, first + static_cast<int64_t>(i)));
        repairs.push_back(clean.repairs);
      }
      for (size_t i = 0; i < prefixes.size(); ++i) {
        const transformer::CleanText clean = transformer::clean_input(prefixes[i]);
        try {
          prefix_ids.push_back(translator.parse_ids(clean.text, first + static_cast<int64_t>(i)));
        } catch (const Error& e) {
          throw Error(cat("--target-prefix '", o.prefix_path, "', ", e.what()));
        }
        prefix_repairs.push_back(clean.repairs);
      }
      out = translator.translate_ids(sources, to, prefix_ids);
      for (size_t i = 0; i < out.size(); ++i) {
        out[i].repairs = repairs[i];
        if (with_prefixes) out[i].prefix_repairs = prefix_repairs[i];
      }
    } else {
      out = translator.translate(lines, to, prefixes);
    }
    } catch (const transformer::SentenceError& e) {
      throw Error(cat("line ", first + e.index(), ": ", e.problem()));
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (size_t i = 0; i < out.size(); ++i) {
      const std::string where = cat("line ", first + static_cast<int64_t>(i));
      for (const std::string& w : transformer::repair_warnings(out[i].repairs, where))
        std::fprintf(stderr, "warning: %s\n", w.c_str());
      for (const std::string& w : transformer::repair_warnings(out[i].prefix_repairs, cat(where, " of --target-prefix")))
        std::fprintf(stderr, "warning: %s\n", w.c_str());
    }
    for (const transformer::Translation& t : out)
      if (!t.hypotheses.empty()) output_tokens += static_cast<int64_t>(t.hypotheses[0].ids.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const transformer::Translation& t = out[i];
      const int64_t n = first + static_cast<int64_t>(i);
      // A line that was not empty but has no tokens (the vocabulary's normalization removes
      // U+FFFD, control and zero-width characters) gets an empty translation, as an empty line
      // does, but not silently.
      if (t.source_ids.empty() && !o.ids && !transformer::clean_input(lines[i]).text.empty())
        std::fprintf(stderr, "warning: line %lld has no tokens (the vocabulary's normalization removes U+FFFD, "
                     "control and zero-width characters); its translation is empty\n", static_cast<long long>(n));
      if (t.truncated)
        std::fprintf(stderr, "warning: line %lld has more than %lld tokens; translated its first %lld\n",
                     static_cast<long long>(n), static_cast<long long>(to.max_input_tokens),
                     static_cast<long long>(to.max_input_tokens));
      auto text = [&](const transformer::Hypothesis& h) { return o.ids ? join_ids(h.ids) : h.text; };
      if (to.search.n_best > 1) {
        for (const transformer::Hypothesis& h : t.hypotheses)
          std::printf("%lld ||| %s ||| %.6f\n", static_cast<long long>(n - 1), text(h).c_str(), h.normalized);
        if (t.hypotheses.empty()) std::printf("%lld ||| ||| 0\n", static_cast<long long>(n - 1));
      } else {
        const std::string best = t.hypotheses.empty() ? "" : text(t.hypotheses[0]);
        if (o.scores) std::printf("%s\t%.6f\n", best.c_str(), t.hypotheses.empty() ? 0.0 : t.hypotheses[0].normalized);
        else std::printf("%s\n", best.c_str());
      }
      if (attention) {
        *attention << attention_record(translator, t, n, o.ids).dump() << '\n';
        if (!attention->good()) check_stream(*attention, cat("--attention '", o.attention_path, "'"));
      }
    }
    check_stdout();  // a full disk stops the run here, not after translating everything
    if (attention) check_stream(*attention, cat("--attention '", o.attention_path, "'"));
    if (g_stop_signal != 0) break;  // SIGINT or SIGTERM: the lines read are written (StopOnSignals)
  }
  // An input shorter than the prefixes (unless a signal stopped the reading).
  if (with_prefixes && line_number != prefix_count && g_stop_signal == 0) throw mismatch(line_number);
  };
  // The attention records go to a temporary file beside --attention, renamed over it once every
  // line is translated: a run that fails leaves an earlier file of that name as it was.
  {
    const StopOnSignals stop_on_signals(input_fd);
    if (o.attention_path.empty()) translate_all(nullptr);
    else write_file_atomic(o.attention_path, [&](std::ostream& out) { translate_all(&out); });
  }
  if (o.stats)
    std::fprintf(stderr, "translated %lld sentences, %lld tokens in %.3f s: %.0f tokens/s\n",
                 static_cast<long long>(line_number), static_cast<long long>(output_tokens), seconds,
                 static_cast<double>(output_tokens) / std::max(seconds, 1e-9));
  if (const int signal = g_stop_signal.load(); signal != 0) {
    const int64_t next = line_number + 1;
    std::string go_on = cat("translate the input from line ", next,
                            input_is_file ? cat(" (tail -n +", next, " '", o.input, "')") : std::string());
    if (with_prefixes) go_on += cat(" with --target-prefix from line ", next, " (tail -n +", next, " '", o.prefix_path, "')");
    if (!o.attention_path.empty()) go_on += ", and --attention to another file (its line numbers start again at 1)";
    if (to.search.n_best > 1) go_on += " (the n-best lists' sentence numbers start again at 0)";
    const std::string done = line_number == 0 ? std::string("no line was translated")
                             : cat("lines 1 to ", line_number, " were translated and written",
                                   o.attention_path.empty() ? "" : cat(" (their attention to '", o.attention_path, "')"));
    std::fprintf(stderr, "stopped by %s: %s; to go on, %s\n", signal == SIGINT ? "SIGINT" : "SIGTERM", done.c_str(),
                 go_on.c_str());
    // End by the signal, as the shell expects of a program that Ctrl-C stopped: a script running
    // this one then stops too (an exit status of 130 would let it go on).
    std::fflush(stdout);
    std::fflush(stderr);
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return 128 + signal;  // not reached
  }
  return 0;
}

Action add_translate(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("translate", "translate sentences from stdin (or --input) to stdout");
  add_model_options(*cmd, o->paths);
  cmd->add_option("-i,--input", o->input, "input file (default: stdin)");
  transformer::SearchOptions& s = o->translate.search;
  cmd->add_option("-b,--beam", s.beam_size, cat("beam size (1: greedy; at most ", transformer::kMaxBeamSize, ")"))
      ->capture_default_str();
  cmd->add_option("--length-penalty", s.length_penalty,
                  "alpha of the length normalization: scores divided by ((5+|Y|)/6)^alpha (gnmt) or |Y|^alpha (power)")
      ->capture_default_str();
  using Search = transformer::SearchOptions;
  cmd->add_option("--length-normalization", s.length_normalization,
                  "gnmt: ((5+|Y|)/6)^alpha (Wu et al.); power: |Y|^alpha (Marian's --normalize, CTranslate2, "
                  "Hugging Face)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, Search::LengthNormalization>{{"gnmt", Search::LengthNormalization::kGnmt},
                                                             {"power", Search::LengthNormalization::kPower}}))
      ->default_str("gnmt");
  cmd->add_option("--beam-stop", s.beam_stop,
                  "first-k: a sentence ends once beam-size hypotheses have ended (fairseq); no-better-live: once "
                  "the best live one cannot beat the worst of beam-size ended ones (Hugging Face generate())")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Search::BeamStop>{
          {"first-k", Search::BeamStop::kFirstK}, {"no-better-live", Search::BeamStop::kNoBetterLive}}))
      ->default_str("first-k");
  cmd->add_option("--max-length-a", s.max_length_a, "at most a*source_tokens + b output tokens")->capture_default_str();
  cmd->add_option("--max-length-b", s.max_length_b, "see --max-length-a")->capture_default_str();
  cmd->add_option("--min-length", s.min_length,
                  "no end of sentence before this many output tokens, end of sentence included (benchmarks "
                  "force a length with --min-length = max length); where a sentence's maximum length is shorter, "
                  "the maximum wins")
      ->capture_default_str();
  cmd->add_option("--n-best", s.n_best, "print this many hypotheses per line: 'i ||| text ||| score'")->capture_default_str();
  cmd->add_option("--sampling-topk", s.sampling_topk,
                  "random sampling (back-translation) with --beam 1: draw each token among the K most probable "
                  "(0: no sampling; 1: greedy; -1: the whole vocabulary)")
      ->capture_default_str();
  cmd->add_option("--sampling-topp", s.sampling_topp,
                  "sampling: draw among the fewest most probable tokens whose probability reaches P, in (0, 1] "
                  "(nucleus sampling; applied after --sampling-topk; 1: off)")
      ->capture_default_str();
  cmd->add_option("--sampling-temperature", s.sampling_temperature,
                  "sampling: divide the logits by T before the softmax (> 0; < 1 sharper, > 1 flatter)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed,
                  "sampling: the random seed; a line's sample depends only on the seed, the options and the line "
                  "(and its prefix), not on threads, batches or its position")
      ->type_name("UINT64")
      ->capture_default_str();
  cmd->add_option("--target-prefix", o->prefix_path,
                  "a file of forced starts of the translations, one line per input line (an empty line: none; "
                  "token ids with --ids): each translation begins with its prefix, scored by teacher forcing, "
                  "and the search continues from it");
  cmd->add_flag("--scores", o->scores, "append each translation's normalized log-probability after a tab");
  cmd->add_flag("--ids", o->ids, "read and write space-separated token ids instead of text");
  cmd->add_flag("--stats", o->stats, "print sentences, output tokens and seconds of translation to stderr");
  auto* int8 = cmd->add_flag("--int8", o->int8,
                             "int8 weight products: faster (most with AVX-512 VNNI or AMX), slightly less exact");
  cmd->add_flag("--bf16", o->bf16,
                "bfloat16 products (inputs rounded to bfloat16, float32 sums, as train --bf16): on a GPU its tensor "
                "cores; on a CPU with AVX-512 BF16 weights packed in bfloat16, faster than the float32 "
                "default (transformer info --cpu: bf16); on other CPUs slower")
      ->excludes(int8);
  cmd->add_flag("--packed-weights,!--no-packed-weights", o->packed,
                "float32 weights packed once for decoding's products (default; faster; the layers' weights are "
                "then kept only in packed form, the output projection also as the embedding)");
  cmd->add_option("--shortlist", o->shortlist_path,
                  "score only the target tokens this shortlist (from `transformer shortlist`) selects for each "
                  "batch: faster, may change translations; --scores are then log-probabilities over the selected "
                  "tokens only");
  cmd->add_option("--attention", o->attention_path,
                  "write encoder-decoder attention as JSON lines: [layer][head][target][source] per sentence");
  cmd->add_option("--batch-size", o->translate.batch_sentences,
                  cat("sentences decoded together (at most ", transformer::kMaxBatchSentences, ")"))
      ->capture_default_str();
  cmd->add_option("--parallel-batches", o->translate.parallel_batches,
                  "batches decoded at the same time, one thread each, at most --threads (more count as --threads; "
                  "0: one per thread when "
                  "a chunk of input lines has at least two batches per thread; 1: one batch at a time on all "
                  "threads). Each batch in flight holds its own decoding caches: more memory")
      ->capture_default_str();
  cmd->add_option("--max-input-tokens", o->translate.max_input_tokens,
                  cat("longer inputs are truncated, with a warning (at most ", transformer::kMaxInputTokens, ")"))
      ->capture_default_str();
  cmd->add_option("--max-memory", o->max_memory_gib,
                  "refuse, before starting, a translation whose decoding is estimated to need more than this many "
                  "GiB (default: 80% of the memory available at the start, the GPU's with --device cuda; 0: no limit)");
  cmd->add_option("--chunk-lines", o->chunk_lines,
                  "input lines read and translated together, sorted by length into batches (more: less padding; "
                  "Ctrl-C or SIGTERM lets the chunk in progress finish and be written, then stops)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  cmd->add_option("--threads", o->threads, "threads (0: all cores)")->capture_default_str()->check(thread_count());
  cmd->add_option("--device", o->device,
                  "where to translate: cpu, or cuda (cuda:0), the first NVIDIA GPU, in a build with the CUDA backend "
                  "(packed float32 weights there, plain with --no-packed-weights, or --bf16; no --int8)")
      ->capture_default_str();
  return [cmd, o] {
    if (!*cmd) return -1;
    o->seed_given = cmd->count("--seed") > 0;
    return run(*o);
  };
}

}  // namespace

static const Command kCommand(40, add_translate);

}  // namespace tfm::cli
