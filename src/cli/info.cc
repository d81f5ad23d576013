// transformer info MODEL: the configuration, the parameter count per component and the file size.
// transformer info --cpu: the CPU, its instruction-set level and what each library runs on it.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_io.h"
#include "model/checkpoint.h"
#include "ops/cpu/isa.h"

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
      std::printf("%s", cpu::cpu_report().c_str());
      if (path->empty()) return 0;
      std::printf("\n");
    }
    TFM_CHECK(!path->empty(), "info: give a model file, or --cpu");
    const SafetensorsFile file = SafetensorsFile::read(*path);
    const auto model = load_model_noting(file, *no_verify);  // validates everything the file claims
    const ModelConfig& c = model->config();
    const auto bytes = std::filesystem::file_size(*path);
    std::printf("model      %s\n", path->c_str());
    std::printf("file size  %s bytes (%.1f MiB)\n", grouped(static_cast<int64_t>(bytes)).c_str(),
                static_cast<double>(bytes) / (1 << 20));
    const auto fp = file.metadata().find(kVocabFingerprintKey);
    std::printf("vocabulary %s\n", fp == file.metadata().end() ? "not recorded" : ("fingerprint " + fp->second).c_str());
    const auto sum = file.metadata().find(kChecksumKey);
    const std::string checksum = sum == file.metadata().end() ? "none (format version 1)"
                                 : *no_verify                  ? sum->second + " (not verified: --no-verify)"
                                                               : sum->second + " (verified)";
    std::printf("checksum   %s\n\n", checksum.c_str());
    std::printf("configuration\n");
    const nlohmann::json j = c;
    for (const std::string& field : model_config_fields()) std::printf("  %-18s %s\n", field.c_str(), j[field].dump().c_str());
    std::printf("  %-18s %lld\n", "head_dim", static_cast<long long>(c.head_dim()));

    int64_t embeddings = 0, encoder = 0, decoder = 0;
    const ParamStore& p = model->params();
    for (int id = 0; id < p.size(); ++id) {
      const std::string& n = p.name(id);
      const int64_t count = p.shape(id).numel();
      if (n.find("embed.") != std::string::npos) embeddings += count;
      else if (n.starts_with("encoder.")) encoder += count;
      else decoder += count;
    }
    std::printf("\nparameters\n");
    std::printf("  %-12s %14s  (%s)\n", "embeddings", grouped(embeddings).c_str(),
                c.tie_source_target ? "shared by source, target and output projection"
                                    : "source; target shared with output projection");
    std::printf("  %-12s %14s  (%lld layers)\n", "encoder", grouped(encoder).c_str(),
                static_cast<long long>(c.encoder_layers));
    std::printf("  %-12s %14s  (%lld layers)\n", "decoder", grouped(decoder).c_str(),
                static_cast<long long>(c.decoder_layers));
    std::printf("  %-12s %14s\n", "total", grouped(p.parameter_count()).c_str());
    const auto& meta = file.metadata();
    for (const auto& [k, v] : meta)
      if (k != "config" && k != "format" && k != "format_version" && k != kChecksumKey)
        std::printf("  meta %s = %s\n", k.c_str(), v.c_str());
    return 0;
  };
}

}  // namespace

static const Command kCommand(20, add_info);

}  // namespace tfm::cli
