// transformer info MODEL: the configuration, the parameter count per component and the file size.
// transformer info --cpu: the CPU, its instruction-set level and what each library runs on it.
// --json: the same facts as one JSON object, for scripts.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

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
std::optional<int> vocabulary_info(const std::string& path, bool json) {
  const bool is_json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  const bool model = path.size() >= 6 && path.compare(path.size() - 6, 6, ".model") == 0;
  if (!is_json && !model) return std::nullopt;
  Vocab vocab;
  try {
    vocab = Vocab::load(path);
  } catch (const Error&) {
    return std::nullopt;  // not a vocabulary after all: model_info says what it is not
  }
  const bool hf = vocab.hf_tokenizer() != nullptr;
  const char* kind = hf                       ? "a Hugging Face tokenizer (an imported model's)"
                     : vocab.has_piece_table() ? "a piece vocabulary (an imported model's) with its SentencePiece models"
                                               : "a SentencePiece model";
  if (json) {
    const nlohmann::ordered_json j = {{"vocabulary", path},
                                      {"kind", hf ? "huggingface" : vocab.has_piece_table() ? "pieces" : "sentencepiece"},
                                      {"size", vocab.size()},
                                      {"fingerprint", vocab.fingerprint()}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("vocabulary  %s\n", path.c_str());
  std::printf("kind        %s\n", kind);
  std::printf("size        %lld entries\n", static_cast<long long>(vocab.size()));
  std::printf("fingerprint %s (model files trained with it record this)\n", vocab.fingerprint().c_str());
  std::printf("\nthis is a vocabulary, not a model: `transformer info MODEL.safetensors` describes a model\n");
  return 0;
}

// The processes, GPUs and CUDA device this build can use: --cpu's lines after the CPU report's.
std::vector<std::pair<std::string, std::string>> parallel_facts() {
  std::vector<std::pair<std::string, std::string>> facts;
  const std::string mpi = tfm::dist::engine();
  facts.emplace_back("processes", mpi.empty() ? "one (this build has no MPI: data-parallel training needs it)"
                                              : "data-parallel training under mpirun, over MPI (" + mpi + ")");
  const std::string nccl = tfm::dist::device_engine();
  facts.emplace_back("gpus", nccl.empty() ? "one per process (this build has no NCCL: several GPUs need it)"
                                          : "one per rank under mpirun, gradients summed by " + nccl);
  const tfm::DeviceMemory* cuda = tfm::device_memory(tfm::Device::CUDA);
  facts.emplace_back("cuda", cuda != nullptr ? cuda->describe()
                                             : "none: " + tfm::builtin_device_absence(tfm::Device::CUDA));
  return facts;
}

// --cpu's facts as JSON: the CPU report's "name  value" lines (an indented line continues the one
// before), then parallel_facts.
nlohmann::ordered_json cpu_json() {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  const std::string report = transformer::cpu_report();
  std::string last;
  for (size_t start = 0, end = 0; start < report.size(); start = end + 1) {
    end = report.find('\n', start);
    if (end == std::string::npos) end = report.size();
    const std::string line = report.substr(start, end - start);
    const size_t gap = line.find(' '), value = line.find_first_not_of(' ', gap);
    if (gap == std::string::npos || value == std::string::npos) continue;
    if (gap == 0 && !last.empty()) j[last] = j[last].get<std::string>() + " " + line.substr(value);
    else if (gap > 0) j[last = line.substr(0, gap)] = line.substr(value);
  }
  for (const auto& [name, value] : parallel_facts()) j[name] = value;
  return j;
}

std::string checksum_text(const transformer::ModelInfo& info) {
  return info.checksum.empty()   ? "none (format version 1)"
         : info.checksum_verified ? info.checksum + " (verified)"
                                  : info.checksum + " (not verified: --no-verify)";
}

void print_model_text(const transformer::ModelInfo& info) {
  std::printf("model      %s\n", info.path.c_str());
  std::printf("file size  %s bytes (%.1f MiB)\n", grouped(info.file_bytes).c_str(),
              static_cast<double>(info.file_bytes) / (1 << 20));
  std::printf("vocabulary %s\n",
              info.vocab_fingerprint.empty() ? "not recorded" : ("fingerprint " + info.vocab_fingerprint).c_str());
  std::printf("checksum   %s\n\n", checksum_text(info).c_str());
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
}

// A metadata value as JSON: the object or array it holds (train_state), else the string itself.
nlohmann::ordered_json metadata_value(const std::string& value) {
  if (!value.empty() && (value.front() == '{' || value.front() == '[')) {
    nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(value, nullptr, false);
    if (!parsed.is_discarded()) return parsed;
  }
  return value;
}

void add_model_json(const transformer::ModelInfo& info, nlohmann::ordered_json& j) {
  j["model"] = info.path;
  j["file_bytes"] = info.file_bytes;
  const auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s); };
  j["vocab_fingerprint"] = or_null(info.vocab_fingerprint);  // null: not recorded
  j["checksum"] = or_null(info.checksum);                    // null: none (format version 1)
  j["checksum_verified"] = info.checksum_verified;
  nlohmann::ordered_json& config = j["config"] = nlohmann::ordered_json::object();
  for (const auto& [field, value] : info.config) config[field] = nlohmann::ordered_json::parse(value);
  j["head_dim"] = info.head_dim;
  j["parameters"] = {{"embeddings", info.embedding_parameters}, {"encoder", info.encoder_parameters},
                     {"decoder", info.decoder_parameters},     {"total", info.total_parameters},
                     {"tied_embeddings", info.tied_embeddings}, {"tied_output", info.tied_output}};
  nlohmann::ordered_json& meta = j["metadata"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : info.metadata) meta[k] = metadata_value(v);
}

struct InfoOptions {
  std::string path;
  bool cpu = false;
  bool no_verify = false;
  bool json = false;
};

int run_info(const InfoOptions& o) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (o.cpu && o.json) {
    j["cpu"] = cpu_json();
  } else if (o.cpu) {
    std::printf("%s", transformer::cpu_report().c_str());
    for (const auto& [name, value] : parallel_facts()) std::printf("%-10s %s\n", name.c_str(), value.c_str());
    if (!o.path.empty()) std::printf("\n");
  }
  if (!o.cpu || !o.path.empty()) {
    TFM_CHECK(!o.path.empty(), "info: give a model file, or --cpu");
    if (const std::optional<int> vocabulary = vocabulary_info(o.path, o.json)) return *vocabulary;
    const transformer::ModelInfo info = transformer::model_info(o.path, !o.no_verify);
    print_notes(info.notes);
    if (o.json) add_model_json(info, j);
    else print_model_text(info);
  }
  if (o.json) std::printf("%s\n", j.dump(2).c_str());
  return 0;
}
}  // namespace

namespace {
Action add_info(CLI::App& app) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "info", "print a model's configuration, parameter counts and file size; or, with --cpu, what runs on this CPU");
  cmd->add_option("model", o->path, "model file (.safetensors)");
  cmd->add_flag("--cpu", o->cpu,
                "the CPU's instruction-set level (TFM_CPU_ISA forces a lower one), the kernels chosen for it, and "
                "oneDNN's and OpenBLAS's choices");
  cmd->add_flag("--json", o->json, "print the same facts as one JSON object (the CPU's under \"cpu\")");
  add_no_verify_flag(*cmd, o->no_verify);
  return [cmd, o] {
    if (!*cmd) return -1;
    return run_info(*o);
  };
}

}  // namespace

static const Command kCommand(20, add_info);

}  // namespace tfm::cli
