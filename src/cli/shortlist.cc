// transformer shortlist --source S --target T --vocab V -o OUT: a vocabulary shortlist from parallel
// text (decode/shortlist.h), for `translate --shortlist OUT`. Usually built from the training data.
#include <cstdio>

#include "cli/commands.h"
#include "cli/streams.h"
#include "transformer/shortlist.h"

namespace tfm::cli {

namespace {

Action add_shortlist(CLI::App& app) {
  struct Options {
    std::string source, target, vocab, output;
    transformer::ShortlistOptions shortlist;
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
    check_not_an_input(o->output, "-o", {{"--source", o->source}, {"--target", o->target}, {"--vocab", o->vocab}});
    const transformer::ShortlistSummary s =
        transformer::build_shortlist(o->source, o->target, o->vocab, o->output, o->shortlist);
    std::fprintf(stderr, "%s\nwrote %s: %lld frequent target tokens, up to %lld per source token\n",
                 s.corpus.c_str(), o->output.c_str(), static_cast<long long>(s.frequent),
                 static_cast<long long>(o->shortlist.per_source));
    return 0;
  };
}

}  // namespace

static const Command kCommand(42, add_shortlist);

}  // namespace tfm::cli
