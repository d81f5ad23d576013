#pragma once
// A small tensor: a typed, contiguous, row-major block of memory on one device, with a shape.
// Copies are cheap handles to the same memory (shared ownership); `view` and `rows` make views
// that share it too. A tensor made by `wrap` does not own its memory (e.g. a slice of the
// parameter store's flat buffer).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"

namespace tfm {

class Tensor {
 public:
  Tensor() = default;

  // New memory, uninitialised / zeroed.
  static Tensor empty(Shape shape, DType dtype = DType::F32, Device device = Device::CPU);
  static Tensor zeros(Shape shape, DType dtype = DType::F32, Device device = Device::CPU);
  // Zeros whose memory the OS commits page by page on first write (large CPU buffers): for
  // long-lived buffers that may stay unwritten, such as the gradients of a model that only translates.
  static Tensor zeros_on_demand(Shape shape, DType dtype = DType::F32, Device device = Device::CPU);
  // A CPU tensor holding a copy of `values` (size must equal shape.numel()).
  template <class T>
  static Tensor from(Shape shape, const std::vector<T>& values) {
    TFM_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "Tensor::from: ", values.size(),
              " values for shape ", shape, " of ", shape.numel(), " elements");
    Tensor t = empty(shape, dtype_of<T>());
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  // A view of memory owned elsewhere; the caller keeps it alive.
  static Tensor wrap(void* data, Shape shape, DType dtype, Device device = Device::CPU);

  bool defined() const { return data_ != nullptr || shape_.numel() == 0; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t size(int i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  size_t bytes() const { return static_cast<size_t>(numel()) * size_of(dtype_); }

  // Typed access; throws if T is not this tensor's dtype.
  template <class T>
  T* data() const {
    TFM_CHECK(dtype_of<T>() == dtype_, "tensor of dtype ", name(dtype_), " accessed as ", name(dtype_of<T>()));
    return static_cast<T*>(data_);
  }
  void* raw() const { return data_; }

  // Same memory, another shape of the same number of elements.
  Tensor view(Shape shape) const;
  // Rows [begin, begin + count) along the first dimension, sharing memory.
  Tensor rows(int64_t begin, int64_t count) const;

  // Set-up helpers (tests, set-up code; not for hot paths). On a device other than the CPU they go
  // through its backend (core/device.h); data<T>() there is a device pointer, not for the host.
  void fill(double value) const;
  void zero() const;
  void copy_from(const Tensor& src) const;    // same shape and dtype; between the CPU and a device too
  Tensor clone() const;                       // on the same device
  Tensor to_device(Device device) const;      // a copy on `device`
  Tensor on(Device device) const;             // this tensor when already on `device`, else a copy there
  Tensor to_host() const { return on(Device::CPU); }  // what the host reads: this or a CPU copy
  std::vector<double> to_doubles() const;     // any dtype and device, as doubles on the host
  Tensor to(DType dtype) const;               // converted copy (F32 <-> F64, I32 -> float); CPU only

 private:
  // A tensor owning `memory` (of at least shape.numel() elements of dtype).
  static Tensor owning(std::shared_ptr<void> memory, Shape shape, DType dtype, Device device);

  std::shared_ptr<void> owner_;  // keeps the memory alive; empty for wrapped memory
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::F32;
  Device device_ = Device::CPU;
};

// Throws unless the two tensors have the same shape; `op` and the names go into the message.
void check_same_shape(const char* op, const char* a_name, const Tensor& a, const char* b_name, const Tensor& b);
void check_dtype(const char* op, const char* t_name, const Tensor& t, DType expected);
void check_rank(const char* op, const char* t_name, const Tensor& t, int rank);

}  // namespace tfm
