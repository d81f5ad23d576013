#pragma once
// All parameters of a model in one contiguous buffer, and all their gradients in another of the
// same layout: the optimizer step, a gradient all-reduce and a checkpoint are each one pass over a
// flat array. Parameters are registered first (name and shape), then `allocate` lays them out;
// each parameter starts on a 64-byte boundary (the gaps are zero and stay zero under Adam).
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"

namespace tfm {

class ParamStore {
 public:
  // Registers a parameter and returns its id. Names are unique; only before allocate().
  int add(const std::string& name, Shape shape);
  // Lays out and zero-fills the value and gradient buffers.
  void allocate(DType dtype = DType::F32, Device device = Device::CPU);
  bool allocated() const { return values_.defined() && values_.numel() > 0; }
  // Moves both buffers to `device` (the values copied, the gradients zero there; none with
  // `gradients` false, for a model that only translates). Views taken before (value(id),
  // grad(id)) keep pointing at the old memory: take them again.
  void to_device(Device device, bool gradients = true);
  Device device() const { return values_.device(); }

  int size() const { return static_cast<int>(entries_.size()); }
  const std::string& name(int id) const { return entry(id).name; }
  const Shape& shape(int id) const { return entry(id).shape; }
  int64_t offset(int id) const { return entry(id).offset; }  // in elements, into the flat buffers
  // Id of a named parameter, or -1.
  int find(const std::string& name) const;

  Tensor value(int id) const;  // a view into the value buffer; refuses a released parameter
  Tensor grad(int id) const;   // a view into the gradient buffer
  // The flat buffers, gaps included; values() refuses once a parameter is released.
  const Tensor& values() const;
  const Tensor& grads() const { return grads_; }
  DType dtype() const { return values_.dtype(); }

  // Gives the memory of a parameter's values back to the system once nothing reads them any more
  // (inference keeps a packed or int8 copy of each weight matrix): the whole pages inside its range
  // stop being resident, and what stays (parts of pages shared with neighbours) is set to NaN. From
  // then on value(id) and values() throw, naming the parameter, rather than hand out stale values;
  // the store can no longer train, save or average.
  int released_count() const { return released_count_; }
  void release(int id);
  bool released(int id) const { return entry(id).released; }

  int64_t parameter_count() const;  // elements in parameters, gaps excluded
  void zero_grad() {
    if (grads_.defined()) grads_.zero();
  }

 private:
  struct Entry {
    std::string name;
    Shape shape;
    int64_t offset = 0;
    bool released = false;
  };
  const Entry& entry(int id) const;
  Tensor slice(const Tensor& flat, int id) const;

  std::vector<Entry> entries_;
  std::unordered_map<std::string, int> by_name_;
  Tensor values_, grads_;
  int released_count_ = 0;
};

}  // namespace tfm
