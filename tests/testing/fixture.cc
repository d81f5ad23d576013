#include "testing/fixture.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <set>
#include <vector>

namespace tfm::testing {

const nlohmann::json& Fixture::entry(const std::string& name) const {
  auto it = root_.find(name);
  if (it == root_.end()) {
    std::string known;
    for (const auto& [key, value] : root_.items()) known += (known.empty() ? "" : ", ") + key;
    throw Error(cat("fixture ", file_, " has no entry '", name, "' (it has: ", known,
                    "); regenerate with `make fixtures`?"));
  }
  return *it;
}

Tensor Fixture::tensor(const std::string& name, DType dtype) const {
  const nlohmann::json& e = entry(name);
  TFM_CHECK(e.is_object() && e.contains("shape") && e.contains("data"), "fixture ", file_, ": entry '", name,
            "' is not a tensor {\"shape\", \"data\"}");
  const Shape shape(e["shape"].get<std::vector<int64_t>>());
  const auto data = e["data"].get<std::vector<double>>();
  TFM_CHECK(static_cast<int64_t>(data.size()) == shape.numel(), "fixture ", file_, ": tensor '", name, "' has ",
            data.size(), " values for shape ", shape);
  if (dtype == DType::I32)
    for (double x : data)
      TFM_CHECK(x == std::trunc(x), "fixture ", file_, ": tensor '", name, "' holds ", x, ", not an integer");
  return Tensor::from(shape, data).to(dtype);
}

double Fixture::number(const std::string& name) const {
  const nlohmann::json& e = entry(name);
  TFM_CHECK(e.is_number(), "fixture ", file_, ": entry '", name, "' is not a number: ", e.dump());
  return e.get<double>();
}

int64_t Fixture::integer(const std::string& name) const {
  const nlohmann::json& e = entry(name);
  TFM_CHECK(e.is_number_integer(), "fixture ", file_, ": entry '", name, "' is not an integer: ", e.dump());
  return e.get<int64_t>();
}

bool Fixture::boolean(const std::string& name) const {
  const nlohmann::json& e = entry(name);
  TFM_CHECK(e.is_boolean(), "fixture ", file_, ": entry '", name, "' is not a bool: ", e.dump());
  return e.get<bool>();
}

namespace {
// The paths temp_path has named, removed (files and folders) when the test program exits normally.
class TempPaths {
 public:
  ~TempPaths() {
    for (const std::filesystem::path& p : paths_) {
      std::error_code ignored;
      std::filesystem::remove_all(p, ignored);
    }
  }
  void add(const std::filesystem::path& p) {
    const std::lock_guard<std::mutex> lock(mutex_);
    paths_.insert(p);
  }

 private:
  std::mutex mutex_;
  std::set<std::filesystem::path> paths_;
};
}  // namespace

std::string temp_path(const std::string& name) {
  static TempPaths named;
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("tfm-test-" + std::to_string(::getpid()) + "-" + name);
  named.add(p);
  return p.string();
}

Fixture load_fixture(const std::string& file) {
  const std::string path = std::string(TFM_FIXTURE_DIR) + "/" + file;
  std::ifstream in(path);
  TFM_CHECK(in, "cannot open fixture ", path, "; regenerate with `make fixtures`");
  try {
    return Fixture(file, nlohmann::json::parse(in));
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat("fixture ", path, " is not valid JSON: ", e.what()));
  }
}

::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (!(got.shape() == want.shape()))
    return ::testing::AssertionFailure() << "shape " << got.shape() << ", expected " << want.shape();
  const std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  int64_t bad = 0, worst = -1;
  double worst_excess = 0;  // how far the worst element is past its tolerance
  for (size_t i = 0; i < g.size(); ++i) {
    const double err = std::abs(g[i] - w[i]), tol = atol + rtol * std::abs(w[i]);
    if (!(err <= tol)) {  // written so that a NaN counts as a failure
      ++bad;
      const double excess = std::isnan(err) ? INFINITY : err - tol;
      if (worst < 0 || excess > worst_excess) worst = static_cast<int64_t>(i), worst_excess = excess;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << std::setprecision(17) << bad << " of " << g.size()
                                       << " elements differ beyond atol " << atol << " + rtol " << rtol
                                       << "·|want|; worst at flat index " << worst << ": got " << g[worst]
                                       << ", want " << w[worst] << " (diff " << g[worst] - w[worst] << ")";
}

}  // namespace tfm::testing
