#pragma once
// Reference values from PyTorch, read from the committed JSON files in tests/fixtures that
// tools/make_fixtures.py writes (`make fixtures`), so the tests never need PyTorch itself.
// A fixture is one JSON object whose entries are tensors, {"shape": [...], "data": [row-major]},
// or scalars (number or bool). Every lookup of a missing or mistyped entry throws tfm::Error naming
// the file and the entry, so a stale fixture fails loudly instead of comparing against garbage.
#include <cstdint>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace tfm::testing {

class Fixture {
 public:
  Fixture(std::string file, nlohmann::json root) : file_(std::move(file)), root_(std::move(root)) {}

  bool has(const std::string& name) const { return root_.contains(name); }
  // A CPU tensor converted to `dtype` (F32 rounds the stored float64 values; I32 requires integers).
  Tensor tensor(const std::string& name, DType dtype = DType::F64) const;
  double number(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  bool boolean(const std::string& name) const;
  // Any entry as stored (e.g. a model configuration object).
  const nlohmann::json& json(const std::string& name) const { return entry(name); }

 private:
  const nlohmann::json& entry(const std::string& name) const;

  std::string file_;
  nlohmann::json root_;
};

// A path in the temporary folder for a test's file, unique to this process: ctest runs the same
// test at several instruction-set levels side by side, so fixed names would collide. Whatever is
// left at the path (a file or a folder) is removed when the test program exits.
std::string temp_path(const std::string& name);

// Reads TFM_FIXTURE_DIR/<file>, e.g. load_fixture("attention.json").
Fixture load_fixture(const std::string& file);

// Passes when every |got − want| ≤ atol + rtol·|want| (numpy's allclose), and the shapes match;
// otherwise says how many elements are off and shows the worst one with its flat index.
::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, double rtol, double atol);

}  // namespace tfm::testing
