// transformer demo-data --out DIR: writes the bundled demo task (English number words → German
// number words, src/data/number_words.h) as train/valid/test parallel text.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "data/number_words.h"

namespace tfm::cli {

namespace {
Action add_demo_data(CLI::App& app) {
  struct Options {
    std::string out;
    uint64_t seed = 1;
    int64_t train = kDefaultNumberTrain, valid = kDefaultNumberValid, test = kDefaultNumberTest;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "demo-data", "write the demo task: English → German number words (0 to 999,999), split into train/valid/test");
  cmd->add_option("--out", o->out, "folder to write {train,valid,test}.{en,de} into (created if needed)")->required();
  cmd->add_option("--seed", o->seed, "random seed: the same seed gives the same files on any machine")
      ->capture_default_str();
  cmd->add_option("--train", o->train, "training pairs")->capture_default_str();
  cmd->add_option("--valid", o->valid, "validation pairs")->capture_default_str();
  cmd->add_option("--test", o->test, "test pairs")->capture_default_str();
  return [cmd, o] {
    if (!*cmd) return -1;
    const NumberDataset data = write_number_dataset(o->out, o->seed, o->train, o->valid, o->test);
    const std::filesystem::path dir(o->out);
    const std::pair<const char*, const std::vector<int64_t>*> splits[] = {
        {"train", &data.train}, {"valid", &data.valid}, {"test", &data.test}};
    std::printf("wrote the number-words demo task (seed %llu) to %s\n", static_cast<unsigned long long>(o->seed),
                o->out.c_str());
    for (const auto& [name, numbers] : splits)
      std::printf("  %-5s %7lld pairs  %s, %s\n", name, static_cast<long long>(numbers->size()),
                  (dir / (std::string(name) + ".en")).c_str(), (dir / (std::string(name) + ".de")).c_str());
    if (!data.train.empty()) {
      const int64_t n = data.train.front();
      std::printf("example: %s → %s\n", english_number(n).c_str(), german_number(n).c_str());
    }
    return 0;
  };
}

}  // namespace

static const Command kCommand(5, add_demo_data);

}  // namespace tfm::cli
