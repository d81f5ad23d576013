// transformer eval --ref REF [--ref REF2 ...] [--hyp HYP]: corpus BLEU and chrF of detokenized
// hypotheses against one or more references, computed as sacreBLEU 2.x does with its defaults, so the
// numbers can be compared with published ones (src/eval/bleu.h, src/eval/chrf.h).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/streams.h"
#include "core/error.h"
#include "eval/bleu.h"
#include "eval/chrf.h"
#include "eval/text.h"
#include "transformer/metrics.h"

namespace tfm::cli {

namespace {

struct EvalOptions {
  std::vector<std::string> refs;
  std::string hyp;  // empty: stdin
  bool lowercase = false;
  std::string tokenize = bleu_tokenize_name(BleuOptions{}.tokenize);  // the BLEU tokenizer by name
  std::vector<std::string> metrics = {"bleu", "chrf"};
  bool json = false;
};

// sacreBLEU's reproducibility signature, without its version field (this is not sacreBLEU). The
// text output prints it as sacreBLEU's text format does, "BLEU|nrefs:1|...|smooth:exp = 35.12 ...",
// so the score stays the third field; --json has it under "signature".
std::string bleu_signature(size_t nrefs, const BleuOptions& o) {
  return cat("nrefs:", nrefs, "|case:", o.lowercase ? "lc" : "mixed", "|eff:no|tok:", bleu_tokenize_name(o.tokenize),
             "|smooth:exp");
}
std::string chrf_signature(size_t nrefs, const ChrfOptions& o) {
  return cat("nrefs:", nrefs, "|case:", o.lowercase ? "lc" : "mixed", "|eff:", o.eps_smoothing ? "no" : "yes",
             "|nc:", o.char_order, "|nw:", o.word_order, "|space:", o.whitespace ? "yes" : "no");
}

// The hypotheses, from --hyp or standard input, and the name errors give them.
std::vector<std::string> read_hypotheses(const EvalOptions& o, std::string& name) {
  if (!o.hyp.empty()) {
    name = o.hyp;
    return read_text_lines(o.hyp);
  }
  name = "stdin";
  check_stdin();
  const std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  TFM_CHECK(!std::cin.bad(), "cannot read the hypotheses from stdin");
  return split_text_lines(text, name);
}

// Every reference file, each with as many lines as the hypotheses.
std::vector<std::vector<std::string>> read_references(const EvalOptions& o, size_t hyps, const std::string& hyp_name) {
  std::vector<std::vector<std::string>> refs;
  for (const std::string& path : o.refs) {
    refs.push_back(read_text_lines(path));
    TFM_CHECK(refs.back().size() == hyps, "the hypotheses (", hyp_name, ") have ", hyps, " lines but the reference ",
              path, " has ", refs.back().size(), " lines");
  }
  return refs;
}

// The metrics --metrics asks for.
struct Wanted {
  bool bleu = false, chrf = false, exact = false;
};

Wanted wanted_metrics(const std::vector<std::string>& metrics) {
  Wanted w;
  for (const std::string& m : metrics) {
    if (m == "bleu") w.bleu = true;
    else if (m == "chrf") w.chrf = true;
    else if (m == "exact") w.exact = true;
    else throw Error(cat("unknown metric '", m, "' (choices: bleu, chrf, exact)"));
  }
  TFM_CHECK(w.bleu || w.chrf || w.exact, "--metrics names no metric");
  return w;
}

// A score line "NAME = ..." as "NAME|SIGNATURE = ...".
std::string signed_line(const std::string& line, const std::string& name, const std::string& signature) {
  TFM_CHECK(line.starts_with(name + " = "), "a score line that does not start with '", name, " = ': ", line);
  return cat(name, "|", signature, line.substr(name.size()));
}

nlohmann::ordered_json bleu_json(const BleuScore& b, size_t nrefs, const BleuOptions& options) {
  return {
      {"score", b.score},
      {"precisions", std::vector<double>(std::begin(b.precisions), std::end(b.precisions))},
      {"bp", b.bp},
      {"ratio", b.ratio},
      {"hyp_len", b.stats.hyp_len},
      {"ref_len", b.stats.ref_len},
      {"counts", std::vector<int64_t>(std::begin(b.stats.correct), std::end(b.stats.correct))},
      {"totals", std::vector<int64_t>(std::begin(b.stats.total), std::end(b.stats.total))},
      {"signature", bleu_signature(nrefs, options)},
      {"line", b.format()},
  };
}

nlohmann::ordered_json chrf_json(const ChrfScore& c, size_t nrefs, const ChrfOptions& options) {
  return {
      {"name", c.name},
      {"score", c.score},
      {"char_order", options.char_order},
      {"word_order", options.word_order},
      {"beta", options.beta},
      {"signature", chrf_signature(nrefs, options)},
      {"line", c.format()},
  };
}

int run_eval(const EvalOptions& o) {
  std::string hyp_name;
  const std::vector<std::string> hyps = read_hypotheses(o, hyp_name);
  const std::vector<std::vector<std::string>> refs = read_references(o, hyps.size(), hyp_name);
  const Wanted want = wanted_metrics(o.metrics);

  BleuOptions bleu_options;
  bleu_options.lowercase = o.lowercase;
  bleu_options.tokenize = parse_bleu_tokenize(o.tokenize);
  ChrfOptions chrf_options;
  chrf_options.lowercase = o.lowercase;

  nlohmann::ordered_json j;
  if (want.bleu) {
    const BleuScore b = corpus_bleu(hyps, refs, bleu_options);
    if (o.json) j["bleu"] = bleu_json(b, refs.size(), bleu_options);
    else std::printf("%s\n", signed_line(b.format(), "BLEU", bleu_signature(refs.size(), bleu_options)).c_str());
  }
  if (want.chrf) {
    const ChrfScore c = corpus_chrf(hyps, refs, chrf_options);
    if (o.json) j["chrf"] = chrf_json(c, refs.size(), chrf_options);
    else std::printf("%s\n", signed_line(c.format(), c.name, chrf_signature(refs.size(), chrf_options)).c_str());
  }
  if (want.exact) {
    // Exact match: the share of segments identical to one of their references (after --lowercase).
    const transformer::ExactMatch m = transformer::exact_match(hyps, refs, o.lowercase);
    const int64_t same = m.matches;
    const double share = m.score;
    if (o.json) j["exact"] = {{"score", share}, {"matches", same}, {"segments", hyps.size()}};
    else std::printf("exact match = %.2f%% (%lld of %zu)\n", share, static_cast<long long>(same), hyps.size());
  }
  if (o.json) {
    j["segments"] = hyps.size();
    j["hyp"] = hyp_name;
    j["refs"] = o.refs;
    std::printf("%s\n", j.dump(2).c_str());
  }
  return 0;
}

Action add_eval(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "score detokenized translations with BLEU and chrF, as sacreBLEU 2.x does with its defaults");
  cmd->add_option("-r,--ref", o->refs, "reference file, one segment per line (repeat for several references)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--hyp", o->hyp, "hypothesis file, one segment per line (default: read stdin)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--lowercase", o->lowercase, "lowercase hypotheses and references (case-insensitive scores)");
  cmd->add_option("--tokenize", o->tokenize, "BLEU tokenizer: 13a (mteval-v13a, sacreBLEU's default) or none")
      ->check(CLI::IsMember({"13a", "none"}))
      ->capture_default_str();
  cmd->add_option("--metrics", o->metrics, "comma-separated metrics: bleu, chrf, exact (segments equal to a reference)")
      ->delimiter(',')
      ->check(CLI::IsMember({"bleu", "chrf", "exact"}))
      ->capture_default_str();
  cmd->add_flag("--json", o->json,
                "print a JSON object with every number instead of the score lines (which read as sacreBLEU's text "
                "format, \"BLEU|nrefs:1|case:mixed|...|smooth:exp = 35.12 ...\")");
  return [cmd, o] {
    if (!*cmd) return -1;
    return run_eval(*o);
  };
}

}  // namespace

static const Command kCommand(60, add_eval);

}  // namespace tfm::cli
