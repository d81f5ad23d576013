#pragma once
// The one order in which data-parallel training sums the gradients of a step's batches, whatever
// the number of processes: floating-point addition is not associative, and an order that followed
// the engine's algorithm (MPI picks one by message size and rank count) or the split of batches
// over ranks would make 1, 2 and 4 ranks train apart, bit by bit and then visibly.
//
// The n terms of a step (its batches, in order) are summed as the tree
//   T(lo, hi) = T(lo, lo + p) + T(lo + p, hi),   p the largest power of two below hi − lo,
// which is pairwise summation. When each rank takes a run of `a` consecutive terms and `a` is a
// power of two, every rank's run is a subtree, and the tree over the ranks' partial sums (the same
// rule over rank numbers) is the rest of it: one process, and any number of ranks, give the same
// bits. (With `a` not a power of two the runs are not subtrees: the sum is still deterministic for
// a given number of ranks, but differs in the last bits between rank counts.)
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace tfm::dist {

// The largest power of two below n (n ≥ 2).
inline int64_t tree_split(int64_t n) {
  int64_t p = 1;
  while (p * 2 < n) p *= 2;
  return p;
}

// terms[0][i] = T(0, k) of terms[0..k-1][i], i < n, in the tree's order; the other terms are
// overwritten with partial sums.
template <typename T>
void tree_sum(T* const* terms, int64_t k, int64_t n) {
  if (k <= 1) return;
  const int64_t p = tree_split(k);
  tree_sum(terms, p, n);
  tree_sum(terms + p, k - p, n);
  T* a = terms[0];
  const T* b = terms[p];
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

// The same tree over terms that come one at a time (a rank's batches): keeps at most log2(n)
// partial sums, each a tensor of the terms' shape (none for one term).
class TreeSum {
 public:
  // Adds a copy of `term`, a term before the last (every term has the same shape and dtype).
  void push(const Tensor& term);
  // `last` holds the last term; on return it holds the sum of all of them, and the sum starts over.
  void finish(const Tensor& last);
  // The same over elements [lo, hi) of the flattened terms only (data-parallel training sums each
  // bucket as soon as the last term's part of it is complete); then reset() starts over.
  void finish_range(const Tensor& last, int64_t lo, int64_t hi) const;
  void reset();

 private:
  struct Part {
    Tensor sum;
    int64_t terms;  // a power of two, except in finish()
  };
  std::vector<Part> parts_;  // decreasing sizes: the complete subtrees so far, left to right
  std::vector<Tensor> spare_;
};

}  // namespace tfm::dist
