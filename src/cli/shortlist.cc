// transformer shortlist --source S --target T --vocab V -o OUT: a vocabulary shortlist from parallel
// text (decode/shortlist.h), for `translate --shortlist OUT`. Usually built from the training data.
#include <cstdio>

#include "cli/commands.h"
#include "core/error.h"
#include "data/parallel_corpus.h"
#include "data/vocab.h"
#include "decode/shortlist.h"

namespace tfm::cli {

namespace {

Action add_shortlist(CLI::App& app) {
  struct Options {
    std::string source, target, vocab, output;
    ShortlistOptions shortlist;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "shortlist", "build a vocabulary shortlist from parallel text (for translate --shortlist)");
  cmd->add_option("--source", o->source, "source side, one sentence per line")->required();
  cmd->add_option("--target", o->target, "target side, line by line the translation of --source")->required();
  cmd->add_option("--vocab", o->vocab, "the model's SentencePiece vocabulary (vocab.model in its folder)")->required();
  cmd->add_option("-o,--output", o->output, "the shortlist file to write")->required();
  cmd->add_option("--per-source", o->shortlist.per_source, "best target tokens kept per source token")
      ->capture_default_str();
  cmd->add_option("--frequent", o->shortlist.frequent, "most frequent target tokens, allowed in every batch")
      ->capture_default_str();
  return [cmd, o] {
    if (!*cmd) return -1;
    o->shortlist.validate();  // before reading anything
    const Vocab vocab = Vocab::load(o->vocab);
    CorpusStats stats;
    const std::vector<SentencePair> pairs = read_parallel(o->source, o->target, 0, &stats);
    TFM_CHECK(!pairs.empty(), "no usable sentence pairs in '", o->source, "' and '", o->target, "' (",
              stats.summary(), ")");
    std::vector<std::vector<int32_t>> src, tgt;
    src.reserve(pairs.size());
    tgt.reserve(pairs.size());
    for (const SentencePair& p : pairs) {
      src.push_back(vocab.encode(p.source));
      tgt.push_back(vocab.encode(p.target));
    }
    const Shortlist s = Shortlist::build(src, tgt, vocab.size(), o->shortlist, vocab.fingerprint());
    s.save(o->output);
    std::fprintf(stderr, "%s\nwrote %s: %lld frequent target tokens, up to %lld per source token\n",
                 stats.summary().c_str(), o->output.c_str(), static_cast<long long>(s.frequent().size()),
                 static_cast<long long>(o->shortlist.per_source));
    return 0;
  };
}

}  // namespace

static const Command kCommand(42, add_shortlist);

}  // namespace tfm::cli
