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

  int size() const { return static_cast<int>(entries_.size()); }
  const std::string& name(int id) const { return entry(id).name; }
  const Shape& shape(int id) const { return entry(id).shape; }
  int64_t offset(int id) const { return entry(id).offset; }  // in elements, into the flat buffers
  // Id of a named parameter, or -1.
  int find(const std::string& name) const;

  Tensor value(int id) const;  // a view into the value buffer
  Tensor grad(int id) const;   // a view into the gradient buffer
  const Tensor& values() const { return values_; }  // the flat buffers, gaps included
  const Tensor& grads() const { return grads_; }

  int64_t parameter_count() const;  // elements in parameters, gaps excluded
  void zero_grad() { grads_.zero(); }

 private:
  struct Entry {
    std::string name;
    Shape shape;
    int64_t offset = 0;
  };
  const Entry& entry(int id) const;
  Tensor slice(const Tensor& flat, int id) const;

  std::vector<Entry> entries_;
  std::unordered_map<std::string, int> by_name_;
  Tensor values_, grads_;
};

}  // namespace tfm
