//===- Arguments.h - argument checks of the CUDA launchers ------*- C++ -*-===//
//
// Each check returns TITANRT_ERROR_INVALID_ARGUMENT (UNSUPPORTED for a
// dtype the CUDA kernels lack) with a message that starts with the
// operation and names the argument and its value.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_ARGUMENTS_H
#define TITAN_RUNTIME_CUDA_ARGUMENTS_H

#include "core/Status.h"
#include "cuda/KernelTypes.h"

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>

namespace titan::rt::cuda {

/// A named extent or pointer of a kernel's arguments.
using NamedExtent = std::pair<const char *, int64_t>;
using NamedPointer = std::pair<const char *, const void *>;

/// Fails unless every extent is >= 0.
Status checkExtents(const char *op, std::initializer_list<NamedExtent> extents);

/// Fails unless `dtype` is TITANRT_F32 or TITANRT_BF16.
Status checkFloatDtype(const char *op, const char *name, int32_t dtype);

/// Fails unless `dtype` is TITANRT_I64 or TITANRT_I32.
Status checkIdsDtype(const char *op, const char *name, int32_t dtype);

/// Whether every pointer is a multiple of `bytes` (a power of two): what
/// vectorized loads and stores need.
bool areAligned(uintptr_t bytes, std::initializer_list<const void *> pointers);

/// Runs `launch(std::integral_constant<int, V>)` for a row kernel that
/// reads V consecutive columns per thread and access (loadFloats): V = 8
/// where the rows' columns are a multiple of 8 and every tensor is 16-byte
/// aligned (so that each thread's 8 columns are one 16-byte access), else V
/// = 1.
template <typename Launch>
Status withRowVector(int64_t cols, std::initializer_list<const void *> tensors,
                     Launch &&launch) {
  if (cols % 8 == 0 && areAligned(16, tensors))
    return launch(std::integral_constant<int, 8>());
  return launch(std::integral_constant<int, 1>());
}

/// Fails if any pointer is null while the kernel has work (`work` > 0).
Status checkPointers(const char *op, int64_t work,
                     std::initializer_list<NamedPointer> pointers);

/// Sets `product` to the product of the (non-negative) factors; fails if it
/// overflows int64, naming the factor that overflows it.
Status checkProduct(const char *op, std::initializer_list<NamedExtent> factors,
                    int64_t &product);

/// The checks both attention launchers make first: `dtype` f32 or bf16, a
/// shape the kernels support (checkAttentionShape), and `rows` = batch x
/// q_heads x seq, the query rows, without overflow.
Status checkAttentionCall(const char *op, int32_t dtype,
                          const AttentionShape &shape, int64_t &rows);

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_ARGUMENTS_H
