// Random sampling's pieces: each sentence's stream of draws (sampling_stream) and one draw from a
// row of logits under the temperature, top-k and top-p options (sample_column).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "decode/search.h"
#include "io/checksum.h"

namespace tfm {

RngStream sampling_stream(uint64_t seed, const std::vector<int32_t>& source, const std::vector<int32_t>& prefix) {
  std::string bytes;
  bytes.reserve(4 * (source.size() + prefix.size() + 1));
  auto put = [&](int32_t v) {
    const auto u = static_cast<uint32_t>(v);
    for (int shift = 0; shift < 32; shift += 8) bytes.push_back(static_cast<char>((u >> shift) & 0xFF));
  };
  for (int32_t v : source) put(v);
  put(-1);
  for (int32_t v : prefix) put(v);
  return RngStream{seed, checksum_of(bytes)};
}

template <typename T>
int32_t sample_column(const T* z, int64_t n, const std::vector<uint8_t>& banned, const SearchOptions& o, double u,
                      SampleScratch& scratch) {
  // The allowed columns with their logits; the masses exp((z − max) / temperature) are the tempered
  // softmax's numerators, computed where needed (ranking by logit ranks by mass).
  auto& cand = scratch.candidates;
  cand.clear();
  double zmax = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    const double v = static_cast<double>(z[j]);
    if (banned[static_cast<size_t>(j)] || std::isnan(v)) continue;
    cand.emplace_back(v, static_cast<int32_t>(j));
    zmax = std::max(zmax, v);
  }
  if (cand.empty()) return -1;
  if (!std::isfinite(zmax)) {  // no finite logit to scale by: the best column, lower first
    for (const auto& c : cand)
      if (c.first == zmax) return c.second;
  }
  const double temperature = o.sampling_temperature;
  auto mass = [&](double v) { return std::exp((v - zmax) / temperature); };
  auto before = [](const std::pair<double, int32_t>& a, const std::pair<double, int32_t>& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  const auto m = static_cast<int64_t>(cand.size());
  const int64_t k = o.sampling_topk < 0 || o.sampling_topk >= m ? m : o.sampling_topk;
  const double p = o.sampling_topp;
  size_t sorted = 0;  // cand[0, sorted) holds the best columns, best first
  if (k < m) {        // top-k: the k best, best first
    std::partial_sort(cand.begin(), cand.begin() + k, cand.end(), before);
    cand.resize(static_cast<size_t>(k));
    sorted = static_cast<size_t>(k);
  }
  double total = 0;
  for (const auto& c : cand) total += mass(c.first);
  size_t keep = cand.size();
  if (p < 1) {  // top-p: the shortest run of best columns whose mass reaches p · total
    const double need = p * total;
    double acc = 0;
    size_t i = 0;
    for (;; ++i) {
      if (i == sorted) {  // sort further, by doubling, as far as the run needs
        const size_t next = std::min(cand.size(), std::max<size_t>(64, 2 * sorted));
        std::partial_sort(cand.begin() + static_cast<std::ptrdiff_t>(sorted),
                          cand.begin() + static_cast<std::ptrdiff_t>(next), cand.end(), before);
        sorted = next;
      }
      acc += mass(cand[i].first);
      if (acc >= need || i + 1 == cand.size()) break;
    }
    keep = i + 1;
    total = acc;
  }
  // The inverse of the cumulative distribution of cand[0, keep), renormalized, at u.
  const double target = u * total;
  double acc = 0;
  int32_t last = cand[0].second;
  for (size_t i = 0; i < keep; ++i) {
    const double w = mass(cand[i].first);
    acc += w;
    if (w > 0) last = cand[i].second;
    if (acc > target) return cand[i].second;
  }
  return last;  // u · total rounded up to the total: the last column that has mass
}
template int32_t sample_column<float>(const float*, int64_t, const std::vector<uint8_t>&, const SearchOptions&, double,
                                      SampleScratch&);
template int32_t sample_column<double>(const double*, int64_t, const std::vector<uint8_t>&, const SearchOptions&,
                                       double, SampleScratch&);

}  // namespace tfm
