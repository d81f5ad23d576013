#include "io/checksum.h"

#include <xxhash.h>

#include <cstdio>

#include "core/error.h"

namespace tfm {

struct Checksum::State {
  XXH3_state_t* s = nullptr;
};

Checksum::Checksum() : state_(std::make_unique<State>()) {
  state_->s = XXH3_createState();
  TFM_CHECK(state_->s != nullptr, "cannot allocate a checksum state");
  XXH3_64bits_reset(state_->s);
}

Checksum::~Checksum() { XXH3_freeState(state_->s); }

void Checksum::update(const void* data, size_t n) {
  if (n > 0) XXH3_64bits_update(state_->s, data, n);
}

uint64_t Checksum::value() const { return XXH3_64bits_digest(state_->s); }

uint64_t checksum_of(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::string format_checksum(uint64_t value) {
  char digits[kChecksumDigits + 1];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(value));
  return std::string(kChecksumPrefix) + digits;
}

uint64_t parse_checksum(std::string_view text, const std::string& what) {
  const auto shown = [&] { return std::string(text.substr(0, 60)); };
  TFM_CHECK(text.size() == kChecksumPrefix.size() + kChecksumDigits && text.starts_with(kChecksumPrefix), what,
            ": '", shown(), "' is not a checksum of the form ", kChecksumPrefix, "<", kChecksumDigits,
            " hex digits>");
  uint64_t value = 0;
  for (char c : text.substr(kChecksumPrefix.size())) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    TFM_CHECK(digit >= 0, what, ": '", shown(), "' is not a checksum: '", std::string(1, c),
              "' is not a lowercase hex digit");
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  return value;
}

}  // namespace tfm
