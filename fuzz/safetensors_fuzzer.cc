// libFuzzer target for the model-file loader: any bytes must either load or throw tfm::Error,
// never crash, hang or read out of bounds (run under AddressSanitizer and UBSan by `make fuzz`).
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tfm::SafetensorsFile file =
        tfm::SafetensorsFile::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    // Unverified first, so that mutations that break the checksum still reach the checks behind it.
    tfm::load_model(file, tfm::DType::F32, tfm::Checksums::kSkip);
    tfm::load_model(file, tfm::DType::F32, tfm::Checksums::kVerify);
  } catch (const tfm::Error&) {
    // Rejected with a message: the expected outcome for malformed input.
  }
  return 0;
}
