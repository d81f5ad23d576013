// transformer demo-data -o DIR: writes the bundled demo task (English number words → German
// number words, src/data/number_words.h) as train/valid/test parallel text.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "transformer/demo.h"

namespace tfm::cli {

namespace {
Action add_demo_data(CLI::App& app) {
  struct Options {
    std::string out;
    uint64_t seed = 1;
    int64_t train = 20000, valid = 500, test = 1000;  // write_demo_data's defaults
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "demo-data", "write the demo task: English → German number words (0 to 999,999), split into train/valid/test");
  // -o/--output as every other command's output; --out, its earlier name, still works.
  cmd->add_option("-o,--output,--out", o->out, "folder to write {train,valid,test}.{en,de} into (created if needed)")
      ->required();
  cmd->add_option("--seed", o->seed, "random seed: the same seed gives the same files on any machine")
      ->capture_default_str();
  cmd->add_option("--train", o->train, "training pairs")->capture_default_str();
  cmd->add_option("--valid", o->valid, "validation pairs")->capture_default_str();
  cmd->add_option("--test", o->test, "test pairs")->capture_default_str();
  return [cmd, o] {
    if (!*cmd) return -1;
    const transformer::DemoData data = transformer::write_demo_data(o->out, o->seed, o->train, o->valid, o->test);
    const std::filesystem::path dir(o->out);
    const std::pair<const char*, int64_t> splits[] = {{"train", data.train}, {"valid", data.valid}, {"test", data.test}};
    std::printf("wrote the number-words demo task (seed %llu) to %s\n", static_cast<unsigned long long>(o->seed),
                o->out.c_str());
    for (const auto& [name, pairs] : splits)
      std::printf("  %-5s %7lld pairs  %s, %s\n", name, static_cast<long long>(pairs),
                  (dir / (std::string(name) + ".en")).c_str(), (dir / (std::string(name) + ".de")).c_str());
    if (data.train > 0) std::printf("example: %s → %s\n", data.example_source.c_str(), data.example_target.c_str());
    return 0;
  };
}

}  // namespace

static const Command kCommand(5, add_demo_data);

}  // namespace tfm::cli
