//===- Reductions.h - elementwise reductions of the collectives -*- C++ -*-===//
//
// The reduction functions all_reduce and reduce_scatter combine buffers
// with, for every element type the CPU backend communicates: f32, f64, i64,
// i32, and bf16 and f16 (combined in f32 and rounded back to nearest even
// after each step, as NCCL does).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_REDUCTIONS_H
#define TITAN_RUNTIME_COMM_REDUCTIONS_H

#include "core/Status.h"

#include <cstddef>
#include <cstdint>

namespace titan::rt {

/// out[i] = a[i] op b[i] for `count` elements; `out` may be `a` or `b`.
using CombineFunction = void (*)(void *out, const void *a, const void *b,
                                 size_t count);

/// data[i] = data[i] / divisor for `count` elements (integers truncate
/// toward zero).
using DivideFunction = void (*)(void *data, size_t count, int64_t divisor);

/// How to reduce elements of one dtype with one titanrt_reduce.
struct Reduction {
  /// The bytes of one element.
  size_t elementSize = 0;
  /// The pairwise combination: the sum for SUM and AVG, else MAX or MIN
  /// (a NaN wins, as in PyTorch).
  CombineFunction combine = nullptr;
  /// For AVG: divides the sum by the group size; null otherwise.
  DivideFunction divide = nullptr;
};

/// The reduction `reduce` over elements of `dtype`, or a
/// TITANRT_ERROR_UNSUPPORTED (i1) / TITANRT_ERROR_INVALID_ARGUMENT
/// (unknown codes) Status naming it.
Status getReduction(int32_t dtype, int32_t reduce, Reduction &reduction);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_REDUCTIONS_H
