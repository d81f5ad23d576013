#include "dist/tree_sum.h"

#include "core/error.h"
#include "ops/elementwise.h"

namespace tfm::dist {

void TreeSum::push(const Tensor& term) {
  Tensor copy;
  if (!spare_.empty()) {
    copy = std::move(spare_.back());
    spare_.pop_back();
    copy.copy_from(term);
  } else {
    copy = term.clone();
  }
  parts_.push_back({std::move(copy), 1});
  ++count_;
  // Two complete subtrees of the same size are the two halves of the next one. (Addition is
  // commutative bit for bit; only the grouping matters.)
  while (parts_.size() >= 2 && parts_[parts_.size() - 2].terms == parts_.back().terms) {
    Part right = std::move(parts_.back());
    parts_.pop_back();
    ops::add_to(right.sum, parts_.back().sum);
    parts_.back().terms *= 2;
    spare_.push_back(std::move(right.sum));
  }
}

void TreeSum::finish(const Tensor& out) {
  TFM_CHECK(!parts_.empty(), "TreeSum::finish: nothing was pushed");
  // What is left are complete subtrees of decreasing size: T(lo, hi) splits at the first of them,
  // so the sum folds from the right.
  while (parts_.size() >= 2) {
    Part right = std::move(parts_.back());
    parts_.pop_back();
    ops::add_to(right.sum, parts_.back().sum);
    spare_.push_back(std::move(right.sum));
  }
  out.copy_from(parts_.back().sum);
  spare_.push_back(std::move(parts_.back().sum));
  parts_.clear();
  count_ = 0;
}

}  // namespace tfm::dist
