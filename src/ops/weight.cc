// Weight handles in each form, and a shortlist's rows of one in the same form.
#include "ops/weight.h"

#include "ops/copy.h"

namespace tfm::ops {

Weight Weight::plain(const Tensor& w, Precision products, std::string_view name) {
  Weight h;
  h.form_ = products == Precision::kBf16 ? WeightForm::kBf16 : WeightForm::kFloat32;
  h.plain_ = w;
  h.name_ = name;
  return h;
}

Weight Weight::packed(const PackedMatrix& p, std::string_view name) {
  Weight h;
  h.form_ = WeightForm::kPacked;
  h.packed_ = &p;
  h.name_ = name;
  return h;
}

Weight Weight::int8(const QuantizedMatrix& q, std::string_view name) {
  Weight h;
  h.form_ = WeightForm::kInt8;
  h.int8_ = &q;
  h.name_ = name;
  return h;
}

Weight Weight::owning(std::shared_ptr<const PackedMatrix> p) {
  Weight h = packed(*p);
  h.owned_ = std::move(p);
  return h;
}

Weight Weight::owning(std::shared_ptr<const QuantizedMatrix> q) {
  Weight h = int8(*q);
  h.owned_ = std::move(q);
  return h;
}

Device Weight::device() const {
  if (packed_) return packed_->device;
  if (int8_) return int8_->scale.device();
  return plain_.device();
}

int64_t Weight::out() const {
  if (packed_) return packed_->out;
  if (int8_) return int8_->out();
  return plain_.size(0);
}

namespace {
// rows = w's rows `ids`: [V', in], on w's device.
Tensor rows_of(const Tensor& w, const Tensor& ids) {
  Tensor rows = Tensor::empty({ids.numel(), w.size(1)}, w.dtype(), w.device());
  index_select(w, ids, rows);
  return rows;
}
}  // namespace

Weight select_rows(const Weight& w, const Tensor& ids) {
  TFM_CHECK(w.defined(), "select_rows: no weight");
  if (const QuantizedMatrix* q = w.as_int8()) {
    TFM_CHECK(q->q.defined(), "select_rows: the int8 weight kept only its panels");
    QuantizedMatrix rows{rows_of(q->q, ids), Tensor::empty({ids.numel()}), Tensor(), nullptr, q->q.size(1)};
    index_select(q->scale, ids, rows.scale);
    return Weight::owning(std::make_shared<const QuantizedMatrix>(std::move(rows)));
  }
  if (const PackedMatrix* p = w.as_packed()) {
    TFM_CHECK(p->weight.defined(), "select_rows: the packed weight's float32 values were given back");
    return Weight::owning(std::make_shared<const PackedMatrix>(
        pack_weight(rows_of(p->weight, ids), Tensor(), Activation::kNone, p->precision)));
  }
  return Weight::plain(rows_of(w.values(), ids), w.precision());
}

}  // namespace tfm::ops
