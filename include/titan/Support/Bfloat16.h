//===- Bfloat16.h - bf16 elements as float32 --------------------*- C++ -*-===//
//
// bf16 is the upper half of an IEEE binary32: widening shifts the bits up,
// narrowing rounds to nearest even (a NaN stays a quiet NaN). Header-only
// and free of dependencies, so that the runtime's kernels and collectives
// and the checkpoint readers and writers share one definition.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_SUPPORT_BFLOAT16_H
#define TITAN_SUPPORT_BFLOAT16_H

#include <cstdint>
#include <cstring>

namespace mlir::titan {

/// The float32 value of the bf16 bits `stored`.
inline float bf16ToFloat(uint16_t stored) {
  uint32_t bits = uint32_t(stored) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// `value` rounded to the nearest bf16 (ties to even), as its bits.
inline uint16_t floatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet and a NaN
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

} // namespace mlir::titan

#endif // TITAN_SUPPORT_BFLOAT16_H
