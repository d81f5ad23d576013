#pragma once
// Shape of a row-major tensor: up to kMaxRank dimensions, stored inline (no allocation).
#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "core/error.h"

namespace tfm {

class Shape {
 public:
  static constexpr int kMaxRank = 6;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(const std::vector<int64_t>& dims) { assign(dims.begin(), dims.end()); }

  int rank() const { return rank_; }
  // Dimension i; negative i counts from the end (-1 is the last).
  int64_t operator[](int i) const {
    const int j = i < 0 ? i + rank_ : i;
    TFM_CHECK(j >= 0 && j < rank_, "dimension index ", i, " out of range for a shape of rank ", rank_);
    return dims_[j];
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }
  // Product of all dimensions but the last: the number of rows when viewed as a matrix.
  int64_t rows() const { return rank_ == 0 ? 1 : numel() / (dims_[rank_ - 1] == 0 ? 1 : dims_[rank_ - 1]); }
  int64_t last() const { return rank_ == 0 ? 1 : dims_[rank_ - 1]; }
  std::vector<int64_t> to_vector() const { return {dims_.begin(), dims_.begin() + rank_}; }

  bool operator==(const Shape& o) const {
    if (rank_ != o.rank_) return false;
    for (int i = 0; i < rank_; ++i)
      if (dims_[i] != o.dims_[i]) return false;
    return true;
  }

 private:
  template <class It>
  void assign(It begin, It end) {
    const auto n = end - begin;
    TFM_CHECK(n <= kMaxRank, "shape of rank ", n, " exceeds the maximum rank ", kMaxRank);
    rank_ = static_cast<int>(n);
    for (int i = 0; i < rank_; ++i, ++begin) {
      TFM_CHECK(*begin >= 0, "negative dimension ", *begin, " in a shape");
      dims_[i] = *begin;
    }
  }

  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

inline std::ostream& operator<<(std::ostream& out, const Shape& s) {
  out << '[';
  for (int i = 0; i < s.rank(); ++i) out << (i ? ", " : "") << s[i];
  return out << ']';
}

}  // namespace tfm
