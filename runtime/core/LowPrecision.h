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

#include "titan/Support/Bfloat16.h"

namespace titan::rt {

using mlir::titan::bf16ToFloat;
using mlir::titan::floatToBf16;

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_LOWPRECISION_H
