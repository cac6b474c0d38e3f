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

#include <cstdint>
#include <cstring>

namespace titan::rt {

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

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_LOWPRECISION_H
