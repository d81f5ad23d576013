// transformer attention -m MODEL "sentence": the encoder-decoder attention of a translation as an
// SVG heatmap (source across, target down): one head, the heads' average, or all heads in a grid.
#include "cli/commands.h"
#include "cli/model_io.h"
#include "cli/streams.h"
#include "core/error.h"
#include "transformer/text.h"
#include "transformer/translator.h"
#include "io/atomic_file.h"
#include "transformer/attention_svg.h"

namespace tfm::cli {

namespace {

struct Options {
  ModelPaths paths;
  std::string sentence, output = "attention.svg";
  int64_t layer = -1, head = -1, beam = 4;
  bool grid = false;
};

int run(const Options& o) {
  transformer::TranslatorOptions lo;
  lo.vocab = o.paths.vocab;
  lo.verify = !o.paths.no_verify;
  check_not_an_input(o.output, "-o", {{"--model", o.paths.model}, {"--vocab", o.paths.vocab}});
  const transformer::Translator translator(o.paths.model, lo);
  print_notes(translator.load_notes());
  const transformer::CleanText clean = transformer::clean_input(o.sentence);
  for (const std::string& w : transformer::repair_warnings(clean.repairs, "the sentence"))
    std::fprintf(stderr, "warning: %s\n", w.c_str());
  TFM_CHECK(!clean.text.empty(), "the sentence is empty");
  transformer::TranslateOptions to;
  to.search.beam_size = o.beam;
  to.search.record_attention = true;
  const transformer::Translation t = translator.translate({clean.text}, to)[0];
  if (t.truncated)
    std::fprintf(stderr, "warning: the sentence has more than %lld tokens; translated and drawn its first %lld\n",
                 static_cast<long long>(to.max_input_tokens), static_cast<long long>(to.max_input_tokens));
  TFM_CHECK(!t.source_ids.empty(), "the sentence '", clean.text,
            "' has no tokens (the vocabulary's normalization removes U+FFFD, control and zero-width characters): "
            "nothing to draw");
  const transformer::Hypothesis& h = t.best();
  TFM_CHECK(!(o.grid && o.head >= 0), "--grid draws every head of the layer: give it or --head ", o.head, ", not both");
  const std::string svg = transformer::attention_svg(translator, t, h, {o.layer, o.head, o.grid});
  write_file_atomic(o.output, [&](std::ostream& out) { out << svg; });
  std::printf("%s\n%s\n", h.text.c_str(), o.output.c_str());
  return 0;
}

Action add_attention(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("attention", "draw the encoder-decoder attention of a translation as SVG");
  add_model_options(*cmd, o->paths);
  cmd->add_option("sentence", o->sentence, "the source sentence")->required();
  cmd->add_option("-o,--output", o->output, "SVG file")->capture_default_str();
  cmd->add_option("--layer", o->layer, "decoder layer, from 0 (default: the last)")->check(non_negative());
  cmd->add_option("--head", o->head, "one head, from 0 (default: the average of all heads)")->check(non_negative());
  cmd->add_flag("--grid", o->grid, "all heads of the layer in a grid");
  cmd->add_option("-b,--beam", o->beam, "beam size")->capture_default_str();
  return [cmd, o] { return *cmd ? run(*o) : -1; };
}

}  // namespace

static const Command kCommand(48, add_attention);

}  // namespace tfm::cli
