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

void TreeSum::finish(const Tensor& last) {
  // The parts are complete subtrees of decreasing size, left to right, and the last term comes
  // after them: whether it would complete a subtree (a merge) or end the sum (T(lo, hi) splits at
  // the first part), each step is "the part on the left + everything to its right".
  while (!parts_.empty()) {
    ops::add_to(parts_.back().sum, last);
    spare_.push_back(std::move(parts_.back().sum));
    parts_.pop_back();
  }
}

void TreeSum::finish_range(const Tensor& last, int64_t lo, int64_t hi) const {
  const Tensor out = last.view({last.numel()}).rows(lo, hi - lo);
  for (auto part = parts_.rbegin(); part != parts_.rend(); ++part)
    ops::add_to(part->sum.view({part->sum.numel()}).rows(lo, hi - lo), out);
}

void TreeSum::reset() {
  for (Part& part : parts_) spare_.push_back(std::move(part.sum));
  parts_.clear();
}

}  // namespace tfm::dist
