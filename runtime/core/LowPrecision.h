//===- LowPrecision.h - bf16 and f16 elements as float32 -------*- C++ -*-===//
//
// The conversions of the runtime's narrow float elements: bf16 is the upper
// half of an f32, rounded to nearest even (a NaN stays a quiet NaN); f16 is
// IEEE binary16 (the compiler's _Float16). Collectives combine narrow
// elements in float32 with them, and the CPU kernels compute on float32
// copies.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_LOWPRECISION_H
#define TITAN_RUNTIME_CORE_LOWPRECISION_H

#include "titan/Runtime/titanrt.h"
#include "titan/Support/Bfloat16.h"

#include <cstdint>

namespace titan::rt {

using mlir::titan::bf16ToFloat;
using mlir::titan::floatToBf16;

/// Writes elements [begin, end) of `values` rounded (to nearest even) to
/// narrow `dtype`, TITANRT_BF16 or TITANRT_F16, to the same elements of
/// `target`.
inline void narrowFloats(int32_t dtype, const float *values, void *target,
                         int64_t begin, int64_t end) {
  if (dtype == TITANRT_BF16) {
    auto *bits = static_cast<uint16_t *>(target);
    for (int64_t i = begin; i < end; ++i)
      bits[i] = floatToBf16(values[i]);
  } else {
    auto *halves = static_cast<_Float16 *>(target);
    for (int64_t i = begin; i < end; ++i)
      halves[i] = static_cast<_Float16>(values[i]);
  }
}

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_LOWPRECISION_H
