#pragma once
// Checksums of files this program writes (model files, shortlists): XXH3-64 of xxHash (the Debian
// library libxxhash), fed in pieces. In files it is written "xxh3-64:" and 16 lowercase hex digits.
// XXH3 detects every error a bit flip or a cut makes with probability 1 − 2⁻⁶⁴ and runs at memory
// speed, so checking a model on load costs little beside reading it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tfm {

class Checksum {
 public:
  Checksum();
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;

  void update(const void* data, size_t n);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  uint64_t value() const;  // of everything fed so far

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The XXH3-64 of `bytes` in one call.
uint64_t checksum_of(std::string_view bytes);

inline constexpr std::string_view kChecksumPrefix = "xxh3-64:";
inline constexpr size_t kChecksumDigits = 16;

// "xxh3-64:0123456789abcdef".
std::string format_checksum(uint64_t value);
// The value of a checksum in that form (the prefix, then exactly 16 lowercase hex digits); throws
// tfm::Error naming `what` and the text otherwise.
uint64_t parse_checksum(std::string_view text, const std::string& what);

}  // namespace tfm
