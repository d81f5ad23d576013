// dist::nccl() of a build with CUDA and NCCL's header (TFM_HAVE_NCCL): NCCL loaded at run time.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "dist/device_communicator.h"
#include "dist/tree_sum.h"
#include "ops/elementwise.h"

namespace tfm::dist {
namespace {

// The entry points used, from libnccl.so.2 (their types from the header the build saw).
struct Nccl {
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetLastError) last_error = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  std::string version;
};

const Nccl& library() {
  static const Nccl lib = [] {
    void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr)
      throw Error(cat("NCCL (training on several GPUs) cannot be loaded: ", dlerror(),
                      "; install NCCL 2 (libnccl.so.2) or add its folder to LD_LIBRARY_PATH"));
    Nccl n;
    auto find = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, symbol));
      if (fn == nullptr) throw Error(cat("NCCL: libnccl.so.2 has no ", symbol, " (NCCL 2.7 or later is needed)"));
    };
    find(n.get_version, "ncclGetVersion");
    find(n.get_unique_id, "ncclGetUniqueId");
    find(n.comm_init_rank, "ncclCommInitRank");
    find(n.comm_destroy, "ncclCommDestroy");
    find(n.error_string, "ncclGetErrorString");
    // Since NCCL 2.13: the detail of the last error, where there is one.
    n.last_error = reinterpret_cast<decltype(n.last_error)>(dlsym(h, "ncclGetLastError"));
    find(n.group_start, "ncclGroupStart");
    find(n.group_end, "ncclGroupEnd");
    find(n.send, "ncclSend");
    find(n.recv, "ncclRecv");
    int v = 0;
    n.get_version(&v);  // 22809: 2.28.9 (since 2.9: major × 10000 + minor × 100 + patch)
    n.version = v >= 20900 ? cat(v / 10000, ".", v / 100 % 100, ".", v % 100) : cat(v / 1000, ".", v / 100 % 10, ".", v % 100);
    return n;
  }();
  return lib;
}

class NcclCommunicator final : public DeviceCommunicator {
 public:
  explicit NcclCommunicator(Communicator& host) : lib_(library()), rank_(host.rank()), size_(host.size()) {
    ncclUniqueId id{};
    if (host.is_root()) check(lib_.get_unique_id(&id), "ncclGetUniqueId");
    host.broadcast(&id, sizeof id, 0);
    check(lib_.comm_init_rank(&comm_, size_, id, rank_), "ncclCommInitRank");
  }
  ~NcclCommunicator() override {
    if (comm_ != nullptr) lib_.comm_destroy(comm_);
  }

  std::string backend() const override { return cat("NCCL ", lib_.version); }

  void all_reduce_tree(const Tensor& data, int contributors) override {
    TFM_CHECK(data.device() != Device::CPU, "NCCL all-reduce: a buffer on the CPU");
    TFM_CHECK(data.dtype() == DType::F32 || data.dtype() == DType::F64, "NCCL all-reduce: a ", name(data.dtype()),
              " buffer");
    TFM_CHECK(contributors >= 1 && contributors <= size_, "all_reduce_tree: ", contributors, " contributors among ",
              size_, " ranks");
    const Tensor flat = data.view({data.numel()});
    const int64_t n = flat.numel(), slice = (n + size_ - 1) / size_;
    auto lo = [&](int r) { return std::min<int64_t>(int64_t{r} * slice, n); };
    auto count = [&](int r) { return std::min<int64_t>(int64_t{r + 1} * slice, n) - lo(r); };
    const int64_t mine = count(rank_);
    const ncclDataType_t type = data.dtype() == DType::F32 ? ncclFloat32 : ncclFloat64;
    const size_t element = size_of(data.dtype());
    // Every contributor's copy of this rank's slice, then their sum in the tree's order.
    if (terms_.numel() < contributors * std::max<int64_t>(mine, 1) || terms_.dtype() != data.dtype())
      terms_ = Tensor::empty({contributors * std::max<int64_t>(mine, 1)}, data.dtype(), data.device());
    auto* base = static_cast<char*>(flat.raw());
    auto* terms = static_cast<char*>(terms_.raw());
    group([&] {
      for (int r = 0; r < size_; ++r) {
        if (rank_ < contributors && count(r) > 0)
          check(lib_.send(base + lo(r) * element, static_cast<size_t>(count(r)), type, r, comm_, nullptr), "ncclSend");
        if (r < contributors && mine > 0)
          check(lib_.recv(terms + r * mine * static_cast<int64_t>(element), static_cast<size_t>(mine), type, r, comm_,
                          nullptr),
                "ncclRecv");
      }
    });
    if (mine > 0) {
      std::vector<Tensor> parts;
      for (int r = 0; r < contributors; ++r) parts.push_back(terms_.rows(r * mine, mine));
      sum(parts, 0, parts.size());
    }
    // Every rank's summed slice to every rank.
    group([&] {
      for (int r = 0; r < size_; ++r) {
        if (mine > 0) check(lib_.send(terms, static_cast<size_t>(mine), type, r, comm_, nullptr), "ncclSend");
        if (count(r) > 0)
          check(lib_.recv(base + lo(r) * element, static_cast<size_t>(count(r)), type, r, comm_, nullptr), "ncclRecv");
      }
    });
  }

 private:
  // parts[lo] = T(lo, hi) of dist/tree_sum.h, element by element.
  static void sum(const std::vector<Tensor>& parts, size_t lo, size_t hi) {
    if (hi - lo <= 1) return;
    const auto p = static_cast<size_t>(tree_split(static_cast<int64_t>(hi - lo)));
    sum(parts, lo, lo + p);
    sum(parts, lo + p, hi);
    ops::add_to(parts[lo + p], parts[lo]);
  }
  template <class F>
  void group(F&& calls) {
    check(lib_.group_start(), "ncclGroupStart");
    try {
      calls();
    } catch (...) {
      (void)lib_.group_end();
      throw;
    }
    check(lib_.group_end(), "ncclGroupEnd");
  }
  void check(ncclResult_t rc, const char* what) const {
    if (rc == ncclSuccess) return;
    const char* detail = comm_ != nullptr && lib_.last_error != nullptr ? lib_.last_error(comm_) : nullptr;
    throw Error(cat("NCCL: ", what, " failed on rank ", rank_, " of ", size_, ": ", lib_.error_string(rc),
                    detail != nullptr && *detail != '\0' ? cat(" (", detail, ")") : std::string()));
  }

  const Nccl& lib_;
  const int rank_, size_;
  ncclComm_t comm_ = nullptr;
  Tensor terms_;  // [contributors × slice] on the GPU, kept between calls
};

}  // namespace

std::unique_ptr<DeviceCommunicator> nccl(Communicator& host) { return std::make_unique<NcclCommunicator>(host); }

std::string device_engine() {
  return cat("NCCL ", NCCL_MAJOR, ".", NCCL_MINOR, " headers; libnccl.so.2 loaded when needed");
}

}  // namespace tfm::dist
