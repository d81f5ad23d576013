#pragma once
// The bundled demo task (`make demo`, `transformer demo-data`): English number words to German
// number words, 0 to 999,999 ("three hundred forty-two" → "dreihundertzweiundvierzig"), a task
// that needs reordering and compounding, generated rather than shipped.
#include <cstdint>
#include <string>

namespace transformer {

struct DemoData {
  int64_t train = 0, valid = 0, test = 0;      // pairs per split
  std::string example_source, example_target;  // the first training pair
};

// Writes dir/{train,valid,test}.{en,de} (creating dir), no number in two splits; the same seed
// gives the same files on any machine.
DemoData write_demo_data(const std::string& dir, uint64_t seed = 1, int64_t train = 20000, int64_t valid = 500,
                         int64_t test = 1000);

}  // namespace transformer
