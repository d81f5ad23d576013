#pragma once
// A weight matrix [out, in] in the form its products take: plain float32 values (multiplied in
// float32 or in bfloat16), packed once (ops/packed.h) or int8 with a scale per row (ops/int8.h).
// Layers and models hand it to ops::product (ops/product.h), which picks the kernel by its form.
#include <memory>
#include <string_view>

#include "core/tensor.h"
#include "ops/int8.h"
#include "ops/matmul.h"
#include "ops/packed.h"

namespace tfm::ops {

enum class WeightForm {
  kNone,     // no weight (Weight's default)
  kFloat32,  // plain float32 values, multiplied as they are
  kBf16,     // plain float32 values (or their bfloat16 copy), the products' inputs in bfloat16 (Precision::kBf16)
  kPacked,   // packed once, in its own precision (PackedMatrix::precision)
  kInt8,     // int8 with a scale per row
};

// A handle, cheap to copy: it refers to the plain tensor's memory or to a packed or int8 matrix
// that its maker keeps alive (the model's copies), or owns that matrix (owning()).
class Weight {
 public:
  Weight() = default;
  // `name` (a parameter's, or empty) names the weight in the products' messages; it must outlive
  // the handle.
  static Weight plain(const Tensor& w, Precision products = Precision::kFloat32, std::string_view name = {});
  static Weight packed(const PackedMatrix& p, std::string_view name = {});
  static Weight int8(const QuantizedMatrix& q, std::string_view name = {});
  // Owning the matrix (a shortlist's rows, made per batch).
  static Weight owning(std::shared_ptr<const PackedMatrix> p);
  static Weight owning(std::shared_ptr<const QuantizedMatrix> q);

  bool defined() const { return form_ != WeightForm::kNone; }
  WeightForm form() const { return form_; }
  Device device() const;
  int64_t out() const;  // rows: the product's output width
  std::string_view name() const { return name_; }
  // Plain values: the form whose products have gradients (training's), into float32 parameters.
  bool differentiable() const { return form_ == WeightForm::kFloat32 || form_ == WeightForm::kBf16; }
  // Products that are float32's, plain or packed: those ops/screen.h's screened argmax stands in for.
  bool float32_products() const {
    return form_ == WeightForm::kFloat32 || (form_ == WeightForm::kPacked && packed_->precision == Precision::kFloat32);
  }

  // The form's own data, for the ops that multiply by it: the plain values (undefined unless
  // differentiable()) in precision(), the packed or the int8 matrix (null unless that form).
  const Tensor& values() const { return plain_; }
  Precision precision() const { return form_ == WeightForm::kBf16 ? Precision::kBf16 : Precision::kFloat32; }
  const PackedMatrix* as_packed() const { return packed_; }
  const QuantizedMatrix* as_int8() const { return int8_; }

 private:
  WeightForm form_ = WeightForm::kNone;
  Tensor plain_;
  const PackedMatrix* packed_ = nullptr;
  const QuantizedMatrix* int8_ = nullptr;
  std::shared_ptr<const void> owned_;  // the packed or int8 matrix when owning(), else null
  std::string_view name_;
};

// The weight's rows `ids` (int32 [V'], on the host) in the same form: a vocabulary shortlist's
// output projection. Plain: a float32 copy of those rows [V', in], in the same precision; packed:
// that copy packed anew as the whole was; int8: those rows of q and their scales (quantized per
// row, so the selected rows of the whole), which needs q kept (release_unpacked not called).
Weight select_rows(const Weight& w, const Tensor& ids);

}  // namespace tfm::ops
