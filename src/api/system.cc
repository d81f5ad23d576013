#include "data/number_words.h"
#include "ops/cpu/isa.h"
#include "transformer/demo.h"
#include "transformer/system.h"

namespace transformer {

std::string cpu_report() { return tfm::cpu::cpu_report(); }

DemoData write_demo_data(const std::string& dir, uint64_t seed, int64_t train, int64_t valid, int64_t test) {
  const tfm::NumberDataset data = tfm::write_number_dataset(dir, seed, train, valid, test);
  DemoData out{static_cast<int64_t>(data.train.size()), static_cast<int64_t>(data.valid.size()),
               static_cast<int64_t>(data.test.size()), "", ""};
  if (!data.train.empty()) {
    out.example_source = tfm::english_number(data.train.front());
    out.example_target = tfm::german_number(data.train.front());
  }
  return out;
}

}  // namespace transformer
