// Loading a model file: a base-size model (vocabulary 32000, 242 MB, read from the page cache)
// with its checksum verified and without; XXH3-64 alone over the file's bytes in memory; and the
// tensors copied out of those bytes with read_into (which checks every value is finite) beside a
// plain copy, their difference being the finite check. docs/checkpoint-format.md records the figures.
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <benchmark/benchmark.h>

#include "io/atomic_file.h"
#include "io/checksum.h"
#include "model/checkpoint.h"

namespace tfm {
namespace {

// A base model written once per process to the temporary folder, removed at exit.
const std::string& base_model_file() {
  static const struct File {
    std::string path;
    File()
        : path((std::filesystem::temp_directory_path() /
                ("tfm-bench-" + std::to_string(::getpid()) + "-base.safetensors"))
                   .string()) {
      ModelConfig c = model_preset("base");
      c.vocab_size = 32000;
      Transformer model(c);
      model.init_parameters(1);
      save_model(model, path);
    }
    ~File() { std::filesystem::remove(path); }
  } file;
  return file.path;
}

void set_bytes(benchmark::State& state, const std::string& path) {
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(std::filesystem::file_size(path)));
}

void BM_LoadModel(benchmark::State& state, Checksums checksums) {
  const std::string& path = base_model_file();
  for (auto _ : state) benchmark::DoNotOptimize(load_model(path, DType::F32, checksums));
  set_bytes(state, path);
}

void BM_ChecksumModelFile(benchmark::State& state) {
  const std::string& path = base_model_file();
  const std::string bytes = read_file(path);
  for (auto _ : state) benchmark::DoNotOptimize(checksum_of(bytes));
  set_bytes(state, path);
}

// Every tensor out of the file's bytes in memory: read_into (copy and finite check) or memcpy.
void BM_TensorsFromMemory(benchmark::State& state, bool check) {
  const std::string& path = base_model_file();
  const SafetensorsFile file = SafetensorsFile::parse(read_file(path), path);
  const std::string bytes = read_file(path);  // for the plain copy
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  const char* data = bytes.data() + 8 + header;
  std::vector<Tensor> dst;
  for (const std::string& n : file.names()) dst.push_back(Tensor::empty(file.shape(n), file.dtype(n)));
  for (auto _ : state) {
    size_t offset = 0;
    for (size_t i = 0; i < dst.size(); ++i) {
      if (check) file.read_into(file.names()[i], dst[i]);
      else std::memcpy(dst[i].raw(), data + offset, dst[i].bytes());
      offset += dst[i].bytes();
    }
    benchmark::ClobberMemory();
  }
  set_bytes(state, path);
}

BENCHMARK_CAPTURE(BM_LoadModel, base_verified, Checksums::kVerify)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LoadModel, base_no_verify, Checksums::kSkip)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ChecksumModelFile)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TensorsFromMemory, read_into_finite_checked, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TensorsFromMemory, memcpy, false)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tfm
