// transformer info MODEL: the configuration, the parameter count per component and the file size.
// transformer info --cpu: the CPU, its instruction-set level and what each library runs on it.
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "core/device.h"
#include "core/error.h"
#include "data/vocab.h"
#include "dist/communicator.h"
#include "dist/device_communicator.h"
#include "transformer/system.h"
#include "transformer/model.h"

namespace tfm::cli {

namespace {
std::string grouped(int64_t n) {  // 12345678 → "12,345,678"
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// A vocabulary given where a model file is expected (its .model or vocabulary.json beside it): what
// it is, its size and the fingerprint model files record, instead of a safetensors header error.
// Nothing for any other file, which then goes to model_info and its errors.
std::optional<int> vocabulary_info(const std::string& path) {
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  const bool model = path.size() >= 6 && path.compare(path.size() - 6, 6, ".model") == 0;
  if (!json && !model) return std::nullopt;
  Vocab vocab;
  try {
    vocab = Vocab::load(path);
  } catch (const Error&) {
    return std::nullopt;  // not a vocabulary after all: model_info says what it is not
  }
  std::printf("vocabulary  %s\n", path.c_str());
  std::printf("kind        %s\n", vocab.has_piece_table() ? "a piece vocabulary (an imported model's) with its "
                                                           "SentencePiece models"
                                                         : "a SentencePiece model");
  std::printf("size        %lld entries\n", static_cast<long long>(vocab.size()));
  std::printf("fingerprint %s (model files trained with it record this)\n", vocab.fingerprint().c_str());
  std::printf("\nthis is a vocabulary, not a model: `transformer info MODEL.safetensors` describes a model\n");
  return 0;
}
}  // namespace

namespace {
Action add_info(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto cpu = std::make_shared<bool>(false);
  auto no_verify = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "info", "print a model's configuration, parameter counts and file size; or, with --cpu, what runs on this CPU");
  cmd->add_option("model", *path, "model file (.safetensors)");
  cmd->add_flag("--cpu", *cpu,
                "the CPU's instruction-set level (TFM_CPU_ISA forces a lower one), the kernels chosen for it, and "
                "oneDNN's and OpenBLAS's choices");
  add_no_verify_flag(*cmd, *no_verify);
  return [cmd, path, cpu, no_verify] {
    if (!*cmd) return -1;
    if (*cpu) {
      std::printf("%s", transformer::cpu_report().c_str());
      const std::string mpi = tfm::dist::engine();
      std::printf("processes  %s\n", mpi.empty() ? "one (this build has no MPI: data-parallel training needs it)"
                                                  : ("data-parallel training under mpirun, over MPI (" + mpi + ")").c_str());
      const std::string nccl = tfm::dist::device_engine();
      std::printf("gpus       %s\n", nccl.empty() ? "one per process (this build has no NCCL: several GPUs need it)"
                                                   : ("one per rank under mpirun, gradients summed by " + nccl).c_str());
      const tfm::DeviceMemory* cuda = tfm::device_memory(tfm::Device::CUDA);
      std::printf("cuda       %s\n", cuda != nullptr ? cuda->describe().c_str()
                                                    : ("none: " + tfm::builtin_device_absence(tfm::Device::CUDA)).c_str());
      if (path->empty()) return 0;
      std::printf("\n");
    }
    TFM_CHECK(!path->empty(), "info: give a model file, or --cpu");
    if (const std::optional<int> vocabulary = vocabulary_info(*path)) return *vocabulary;
    const transformer::ModelInfo info = transformer::model_info(*path, !*no_verify);
    print_notes(info.notes);
    std::printf("model      %s\n", path->c_str());
    std::printf("file size  %s bytes (%.1f MiB)\n", grouped(info.file_bytes).c_str(),
                static_cast<double>(info.file_bytes) / (1 << 20));
    std::printf("vocabulary %s\n",
                info.vocab_fingerprint.empty() ? "not recorded" : ("fingerprint " + info.vocab_fingerprint).c_str());
    const std::string checksum = info.checksum.empty() ? "none (format version 1)"
                                 : info.checksum_verified ? info.checksum + " (verified)"
                                                          : info.checksum + " (not verified: --no-verify)";
    std::printf("checksum   %s\n\n", checksum.c_str());
    std::printf("configuration\n");
    for (const auto& [field, value] : info.config) std::printf("  %-18s %s\n", field.c_str(), value.c_str());
    std::printf("  %-18s %lld\n", "head_dim", static_cast<long long>(info.head_dim));
    std::printf("\nparameters\n");
    const char* sharing = info.tied_embeddings ? (info.tied_output ? "shared by source, target and output projection"
                                                                   : "shared by source and target; output projection "
                                                                     "of its own")
                                               : (info.tied_output ? "source; target shared with output projection"
                                                                   : "source, target and output projection, each its own");
    std::printf("  %-12s %14s  (%s)\n", "embeddings", grouped(info.embedding_parameters).c_str(), sharing);
    std::printf("  %-12s %14s  (%lld layers)\n", "encoder", grouped(info.encoder_parameters).c_str(),
                static_cast<long long>(info.encoder_layers));
    std::printf("  %-12s %14s  (%lld layers)\n", "decoder", grouped(info.decoder_parameters).c_str(),
                static_cast<long long>(info.decoder_layers));
    std::printf("  %-12s %14s\n", "total", grouped(info.total_parameters).c_str());
    for (const auto& [k, v] : info.metadata) std::printf("  meta %s = %s\n", k.c_str(), v.c_str());
    return 0;
  };
}

}  // namespace

static const Command kCommand(20, add_info);

}  // namespace tfm::cli
