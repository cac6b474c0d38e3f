//===- LowPrecision.cpp - bf16 conversions compiled kernels call ----------===//
//
// LLVM lowers a conversion to bf16 (`fptrunc float to bfloat`) on CPUs
// without a bf16 conversion instruction (no AVX512-BF16 or AVX-NE-CONVERT)
// to a call of the compiler runtime's __truncsfbf2 (__truncdfbf2 from
// double), which libgcc has only from GCC 13 on. The kernels titan compiles
// link libtitanrt, so it provides both, rounding to nearest even as
// floatToBf16 does. bf16 is returned as the x86-64 psABI passes it: like
// _Float16, in the low 16 bits of xmm0.
//
//===----------------------------------------------------------------------===//

#include "core/LowPrecision.h"

#include <cstring>

namespace {

/// The bf16 bits `bits` as the psABI returns a bf16.
_Float16 returnedBf16(uint16_t bits) {
  _Float16 value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

} // namespace

extern "C" _Float16 __truncsfbf2(float value) {
  return returnedBf16(titan::rt::floatToBf16(value));
}

extern "C" _Float16 __truncdfbf2(double value) {
  // Through float, as the compiler and the interpreter round f64 to bf16.
  return returnedBf16(titan::rt::floatToBf16(static_cast<float>(value)));
}
