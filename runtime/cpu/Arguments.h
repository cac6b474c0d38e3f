//===- Arguments.h - argument checks shared by the CPU kernels --*- C++ -*-===//
//
// Each check returns TITANRT_ERROR_INVALID_ARGUMENT (or UNSUPPORTED for a
// dtype the backend lacks) with a message that starts with the operation
// and names the argument (as titanrt.h spells it) and its value.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CPU_ARGUMENTS_H
#define TITAN_RUNTIME_CPU_ARGUMENTS_H

#include "core/Status.h"

#include <cstdint>
#include <initializer_list>

namespace titan::rt::cpu {

/// Fails unless `value` >= 0.
Status checkNonNegative(const char *op, const char *name, int64_t value);

/// Fails if `dtype` is not a floating-point type the kernel supports: f32,
/// bf16 and f16 (on float32 copies, cpu/Widen.h), and f64 with `allowF64`.
/// An unknown code is an invalid argument, a known dtype the kernel lacks is
/// unsupported.
Status checkFloatDtype(const char *op, int32_t dtype, bool allowF64);

/// Fails if the product of the non-negative `dims` overflows int64, or if
/// `pointer` is null while that product (the elements the buffer holds) is
/// not 0.
Status checkBuffer(const char *op, const char *name, const void *pointer,
                   std::initializer_list<int64_t> dims);

} // namespace titan::rt::cpu

#endif // TITAN_RUNTIME_CPU_ARGUMENTS_H
