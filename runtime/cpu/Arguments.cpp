//===- Arguments.cpp - argument checks shared by the CPU kernels ----------===//

#include "cpu/Arguments.h"

using namespace titan::rt;
using namespace titan::rt::cpu;

Status cpu::checkNonNegative(const char *op, const char *name, int64_t value) {
  if (value >= 0)
    return Status::success();
  return Status::invalidArgument(std::string(op) + ": " + name + " = " +
                                 std::to_string(value) + " is negative");
}

Status cpu::checkFloatDtype(const char *op, int32_t dtype, bool allowF64) {
  if (dtype == TITANRT_F32 || dtype == TITANRT_BF16 || dtype == TITANRT_F16 ||
      (allowF64 && dtype == TITANRT_F64))
    return Status::success();
  if (dtypeSize(dtype) == 0)
    return Status::invalidArgument(std::string(op) + ": dtype " +
                                   std::to_string(dtype) +
                                   " is not a titanrt_dtype");
  return Status::unsupported(
      std::string(op) + ": dtype " + dtypeName(dtype) +
      " is not supported by the CPU backend (" +
      (allowF64 ? "f32, f64, bf16, f16" : "f32, bf16, f16") + ")");
}

Status cpu::checkBuffer(const char *op, const char *name, const void *pointer,
                        std::initializer_list<int64_t> dims) {
  int64_t elements = 1;
  for (int64_t dim : dims)
    if (__builtin_mul_overflow(elements, dim, &elements))
      return Status::invalidArgument(std::string(op) + ": " + name +
                                     " has more than 2^63 elements");
  if (pointer || elements == 0)
    return Status::success();
  return Status::invalidArgument(std::string(op) + ": " + name +
                                 " is null but holds " +
                                 std::to_string(elements) + " elements");
}
