//===- Rounding.h - titan.rounded_div and titan.remainder -------*- C++ -*-===//
//
// The element functions of titan.rounded_div and titan.remainder, which the
// reference interpreter evaluates and the linalg lowering builds in arith
// ops step for step. Integers: a division by zero or by -1 divides by 1 (and
// negates for -1), so that no division traps; the floor rounding corrects
// the truncated quotient where the remainder's sign differs from the
// divisor's. Floats: PyTorch's formulas from fmod (div_floor_floating and
// remainder of aten/src/ATen/native/BinaryOps).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_ROUNDING_H
#define TITAN_DIALECT_ROUNDING_H

#include <cmath>
#include <cstdint>
#include <utility>

namespace mlir::titan {

/// The quotient and remainder of integers `a` and `b`, rounded toward -inf
/// or toward zero (`truncate`), in wrapping 64-bit arithmetic.
inline std::pair<int64_t, int64_t> integerDivision(int64_t a, int64_t b,
                                                   bool truncate) {
  bool byMinusOne = b == -1;
  int64_t divisor = b == 0 || byMinusOne ? 1 : b;
  int64_t quotient = a / divisor;
  int64_t remainder = a % divisor;
  if (byMinusOne)
    quotient = static_cast<int64_t>(0 - static_cast<uint64_t>(quotient));
  if (!truncate && remainder != 0 && (remainder < 0) != (b < 0)) {
    quotient -= 1;
    remainder += b;
  }
  return {quotient, remainder};
}

/// `a / b` rounded toward -inf (PyTorch's div_floor_floating) or toward
/// zero, computed in `T` (f32 for f32, bf16 and f16 tensors, as the kernels
/// and PyTorch compute them).
template <typename T> T roundedFloatDivision(T a, T b, bool truncate) {
  if (truncate)
    return std::trunc(a / b);
  if (b == 0)
    return a / b;
  T remainder = std::fmod(a, b);
  T quotient = (a - remainder) / b;
  if (remainder != 0 && (b < 0) != (remainder < 0))
    quotient -= 1;
  if (quotient == 0)
    return std::copysign(T(0), a / b);
  T floored = std::floor(quotient);
  return quotient - floored > T(0.5) ? floored + 1 : floored;
}

/// The remainder of `a / b` with the sign of `b` (torch.remainder) or of
/// `a` (torch.fmod, `truncate`), computed in `T`.
template <typename T> T floatRemainder(T a, T b, bool truncate) {
  T remainder = std::fmod(a, b);
  if (!truncate && remainder != 0 && (b < 0) != (remainder < 0))
    remainder += b;
  return remainder;
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_ROUNDING_H
