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

Status checkAddend(const char *op, const void *addend, const void *out,
                   int64_t bytes) {
  auto first = reinterpret_cast<uintptr_t>(addend);
  auto second = reinterpret_cast<uintptr_t>(out);
  if (!addend || addend == out || first >= second + uintptr_t(bytes) ||
      second >= first + uintptr_t(bytes))
    return Status::success();
  return Status::invalidArgument(std::string(op) +
                                 ": the addend overlaps the output without "
                                 "being it");
}

} // namespace titan::rt
