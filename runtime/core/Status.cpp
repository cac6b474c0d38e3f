//===- Status.cpp - element types and errors of libtitanrt ----------------===//

#include "core/Status.h"

namespace titan::rt {

size_t dtypeSize(int32_t dtype) {
  switch (dtype) {
  case TITANRT_F32:
  case TITANRT_I32:
    return 4;
  case TITANRT_F64:
  case TITANRT_I64:
    return 8;
  case TITANRT_BF16:
  case TITANRT_F16:
    return 2;
  case TITANRT_BOOL:
    return 1;
  default:
    return 0;
  }
}

std::string dtypeName(int32_t dtype) {
  switch (dtype) {
  case TITANRT_F32:
    return "f32";
  case TITANRT_F64:
    return "f64";
  case TITANRT_BF16:
    return "bf16";
  case TITANRT_F16:
    return "f16";
  case TITANRT_I64:
    return "i64";
  case TITANRT_I32:
    return "i32";
  case TITANRT_BOOL:
    return "i1";
  default:
    return "dtype " + std::to_string(dtype);
  }
}

} // namespace titan::rt
