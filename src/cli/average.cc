// transformer average CKPT... -o OUT: the element-wise mean of the parameters of several checkpoints
// (the paper averaged the last 5, or 20 for the big model, §6.1). Checkpoints of different
// configurations are refused.
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "core/error.h"
#include "model/checkpoint.h"

namespace tfm::cli {

namespace {

Action add_average(CLI::App& app) {
  struct Options {
    std::vector<std::string> inputs;
    std::string output;
    bool no_verify = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("average", "average the parameters of several checkpoints into one model");
  cmd->add_option("checkpoints", o->inputs, "model or checkpoint files (.safetensors)")->required();
  cmd->add_option("-o,--output", o->output, "the averaged model to write")->required();
  add_no_verify_flag(*cmd, o->no_verify);
  return [cmd, o] {
    if (!*cmd) return -1;
    // Summed in double, one checkpoint at a time, so memory stays at one model plus the sum.
    // The vocabulary fingerprint, if recorded, must be the same in every input; the output keeps it.
    auto fingerprint = [](const SafetensorsFile& f) {
      const auto it = f.metadata().find(kVocabFingerprintKey);
      return it == f.metadata().end() ? std::string() : it->second;
    };
    std::string vocab_fingerprint;
    std::unique_ptr<Transformer> first;
    {
      const SafetensorsFile file = SafetensorsFile::read(o->inputs[0]);
      first = load_model_noting(file, o->no_verify);
      vocab_fingerprint = fingerprint(file);
    }
    const nlohmann::json config = first->config();
    const Tensor& values = first->params().values();
    std::vector<double> sum = values.to_doubles();
    for (size_t i = 1; i < o->inputs.size(); ++i) {
      const SafetensorsFile file = SafetensorsFile::read(o->inputs[i]);
      // A file without a fingerprint (older versions, init) is of unknown vocabulary: not a conflict.
      const std::string other_vocab = fingerprint(file);
      TFM_CHECK(other_vocab.empty() || vocab_fingerprint.empty() || other_vocab == vocab_fingerprint, "cannot average '",
                o->inputs[i], "' with the earlier inputs: they were trained with different vocabularies (fingerprints ",
                other_vocab, " and ", vocab_fingerprint, ")");
      if (vocab_fingerprint.empty()) vocab_fingerprint = other_vocab;
      const std::unique_ptr<Transformer> m = load_model_noting(file, o->no_verify);
      const nlohmann::json other = m->config();
      TFM_CHECK(other == config, "cannot average '", o->inputs[i], "' with '", o->inputs[0],
                "': their configurations differ (", other.dump(), " vs ", config.dump(), ")");
      const std::vector<double> v = m->params().values().to_doubles();
      for (size_t k = 0; k < sum.size(); ++k) sum[k] += v[k];
    }
    const double n = static_cast<double>(o->inputs.size());
    float* out = values.data<float>();
    for (size_t k = 0; k < sum.size(); ++k) out[k] = static_cast<float>(sum[k] / n);
    std::map<std::string, std::string> meta = {{"averaged_from", std::to_string(o->inputs.size()) + " checkpoints"}};
    if (!vocab_fingerprint.empty()) meta[kVocabFingerprintKey] = vocab_fingerprint;
    save_model(*first, o->output, meta);
    std::printf("averaged %zu checkpoints into %s\n", o->inputs.size(), o->output.c_str());
    return 0;
  };
}

}  // namespace

static const Command kCommand(50, add_average);

}  // namespace tfm::cli
