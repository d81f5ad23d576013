#include "core/dtype.h"

namespace tfm {

const char* name(Device d) {
  switch (d) {
    case Device::CPU: return "cpu";
    case Device::CUDA: return "cuda";
  }
  return "?";
}

const char* name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F64: return "float64";
    case DType::I32: return "int32";
    case DType::I8: return "int8";
    case DType::BF16: return "bfloat16";
  }
  return "?";
}

size_t size_of(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::I32: return 4;
    case DType::I8: return 1;
    case DType::BF16: return 2;
  }
  return 0;
}

}  // namespace tfm
