//===- Arguments.cpp - argument checks of the CUDA launchers --------------===//

#include "cuda/Arguments.h"

#include "cuda/LaunchConfig.h"

#include <string>

using namespace titan::rt;
using namespace titan::rt::cuda;

Status cuda::checkExtents(const char *op,
                          std::initializer_list<NamedExtent> extents) {
  for (auto [name, value] : extents)
    if (value < 0)
      return Status::invalidArgument(std::string(op) + ": " + name + " = " +
                                     std::to_string(value) + " is negative");
  return Status::success();
}

namespace {

Status checkDtype(const char *op, const char *name, int32_t dtype, int32_t a,
                  int32_t b, const char *kind) {
  if (dtype == a || dtype == b)
    return Status::success();
  std::string prefix = std::string(op) + ": " + name + " ";
  if (dtypeSize(dtype) == 0)
    return Status::invalidArgument(prefix + std::to_string(dtype) +
                                   " is not a titanrt_dtype");
  return Status::unsupported(prefix + dtypeName(dtype) +
                             " is not supported by the CUDA kernels (" + kind +
                             ")");
}

} // namespace

Status cuda::checkFloatDtype(const char *op, const char *name, int32_t dtype) {
  return checkDtype(op, name, dtype, TITANRT_F32, TITANRT_BF16, "f32, bf16");
}

Status cuda::checkIdsDtype(const char *op, const char *name, int32_t dtype) {
  return checkDtype(op, name, dtype, TITANRT_I64, TITANRT_I32, "i64, i32");
}

bool cuda::areAligned(uintptr_t bytes,
                      std::initializer_list<const void *> pointers) {
  for (const void *pointer : pointers)
    if (reinterpret_cast<uintptr_t>(pointer) % bytes != 0)
      return false;
  return true;
}

Status cuda::checkPointers(const char *op, int64_t work,
                           std::initializer_list<NamedPointer> pointers) {
  if (work == 0)
    return Status::success();
  for (auto [name, pointer] : pointers)
    if (!pointer)
      return Status::invalidArgument(std::string(op) + ": " + name +
                                     " is null");
  return Status::success();
}

Status cuda::checkProduct(const char *op,
                          std::initializer_list<NamedExtent> factors,
                          int64_t &product) {
  product = 1;
  for (auto [name, value] : factors)
    if (__builtin_mul_overflow(product, value, &product))
      return Status::invalidArgument(std::string(op) + ": " + name +
                                     " makes the tensor larger than 2^63 "
                                     "elements");
  return Status::success();
}

Status cuda::checkAttentionCall(const char *op, int32_t dtype,
                                const AttentionShape &shape, int64_t &rows) {
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "dtype", dtype));
  TITANRT_RETURN_IF_ERROR(checkAttentionShape(op, shape));
  return checkProduct(
      op,
      {{"batch", shape.batch}, {"q_heads", shape.qHeads}, {"seq", shape.seq}},
      rows);
}
