#include "core/param_store.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>

namespace tfm {

namespace {
constexpr int64_t kAlignBytes = 64;
}

int ParamStore::add(const std::string& name, Shape shape) {
  TFM_CHECK(!values_.defined() || values_.numel() == 0, "ParamStore::add('", name,
            "') after allocate(): register every parameter first");
  TFM_CHECK(!by_name_.count(name), "ParamStore::add: parameter '", name, "' registered twice");
  const int id = static_cast<int>(entries_.size());
  entries_.push_back({name, shape, 0});
  by_name_[name] = id;
  return id;
}

void ParamStore::allocate(DType dtype, Device device) {
  TFM_CHECK(dtype == DType::F32 || dtype == DType::F64, "ParamStore: parameters must be float32 or float64, got ",
            tfm::name(dtype));
  const int64_t align = kAlignBytes / static_cast<int64_t>(size_of(dtype));
  int64_t total = 0;
  for (Entry& e : entries_) {
    e.offset = total;
    total += (e.shape.numel() + align - 1) / align * align;
  }
  values_ = Tensor::zeros_on_demand({total}, dtype, device);
  grads_ = Tensor::zeros_on_demand({total}, dtype, device);  // resident only once training writes it
}

void ParamStore::to_device(Device device, bool gradients) {
  TFM_CHECK(allocated(), "ParamStore: to_device before allocate");
  TFM_CHECK(released_count_ == 0, "ParamStore: ", released_count_, " parameters were released (an inference copy); ",
            "they cannot move to ", tfm::name(device));
  if (values_.device() == device) return;
  values_ = values_.to_device(device);
  grads_ = gradients ? Tensor::zeros(grads_.shape(), grads_.dtype(), device) : Tensor();
}

int ParamStore::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

const ParamStore::Entry& ParamStore::entry(int id) const {
  TFM_CHECK(id >= 0 && id < size(), "ParamStore: parameter id ", id, " out of range [0, ", size(), ")");
  return entries_[id];
}

Tensor ParamStore::slice(const Tensor& flat, int id) const {
  TFM_CHECK(flat.numel() > 0 || entries_.empty(), "ParamStore: parameters used before allocate()");
  const Entry& e = entry(id);
  char* base = static_cast<char*>(flat.raw()) + static_cast<size_t>(e.offset) * size_of(flat.dtype());
  return Tensor::wrap(base, e.shape, flat.dtype(), flat.device());
}

Tensor ParamStore::value(int id) const {
  TFM_CHECK(!entry(id).released, "parameter '", entry(id).name,
            "' was released after its packed or int8 copy was made: this model can only translate");
  return slice(values_, id);
}

const Tensor& ParamStore::values() const {
  TFM_CHECK(released_count_ == 0, "the parameter buffer is incomplete: ", released_count_,
            " parameters were released after their packed or int8 copies were made (this model can only translate)");
  return values_;
}

void ParamStore::release(int id) {
  const Entry& e = entry(id);
  TFM_CHECK(allocated(), "ParamStore::release('", e.name, "') before allocate()");
  if (e.released) return;
  // NaN first: a read that bypasses value(id) (an old view) then shows in the results, also in the
  // parts of the range that share a page with a neighbour and stay resident.
  slice(values_, id).fill(std::numeric_limits<double>::quiet_NaN());
  entries_[static_cast<size_t>(id)].released = true;
  ++released_count_;
  if (values_.device() != Device::CPU) return;
  // Only whole pages inside the range can go: its first and last pages may hold neighbours.
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(static_cast<char*>(values_.raw()) +
                                                 static_cast<size_t>(e.offset) * size_of(values_.dtype()));
  const uintptr_t end = begin + static_cast<uintptr_t>(e.shape.numel()) * size_of(values_.dtype());
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last > first)
    TFM_CHECK(madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) == 0, "releasing parameter '",
              e.name, "' (", last - first, " bytes): ", std::strerror(errno));
}
Tensor ParamStore::grad(int id) const {
  TFM_CHECK(grads_.defined(), "ParamStore: no gradient buffer (the model was moved to a device to translate only)");
  return slice(grads_, id);
}

int64_t ParamStore::parameter_count() const {
  int64_t n = 0;
  for (const Entry& e : entries_) n += e.shape.numel();
  return n;
}

}  // namespace tfm
