//===- RandomUniform.h - titan.random_uniform's generator -------*- C++ -*-===//
//
// The counter-based generator of titan.random_uniform, which the reference
// interpreter evaluates with these functions and the linalg lowering builds
// from the same constants in arith ops (so both draw bitwise the same
// numbers): splitmix64's mixing function applied to a Weyl sequence,
//   streamKey = mix(mix(seed + kGamma) + stream * kGamma)    (compile time)
//   stepKey   = mix(streamKey + step * kGamma)
//   u         = (mix(stepKey + counter * kGamma) >> 40) * 2^-24
// in wrapping 64-bit arithmetic: 24 uniform bits, exact in float32.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_RANDOMUNIFORM_H
#define TITAN_DIALECT_RANDOMUNIFORM_H

#include <cstdint>

namespace mlir::titan {

/// splitmix64's increment (2^64 / the golden ratio, odd).
constexpr uint64_t kRandomGamma = 0x9E3779B97F4A7C15ULL;
/// The multipliers and shifts of splitmix64's mixing function.
constexpr uint64_t kRandomMultiplier1 = 0xBF58476D1CE4E5B9ULL;
constexpr uint64_t kRandomMultiplier2 = 0x94D049BB133111EBULL;
constexpr unsigned kRandomShift1 = 30, kRandomShift2 = 27, kRandomShift3 = 31;
/// The uniform bits kept (the high ones) and the scale that maps them to
/// [0, 1).
constexpr unsigned kRandomBits = 24;
constexpr float kRandomScale = 1.0f / float(1u << kRandomBits);

/// splitmix64's mixing function: a bijection of 64-bit words.
constexpr uint64_t randomMix(uint64_t z) {
  z = (z ^ (z >> kRandomShift1)) * kRandomMultiplier1;
  z = (z ^ (z >> kRandomShift2)) * kRandomMultiplier2;
  return z ^ (z >> kRandomShift3);
}

/// The key of stream `stream` of seed `seed`, before the step.
constexpr uint64_t randomStreamKey(int64_t seed, int64_t stream) {
  return randomMix(randomMix(uint64_t(seed) + kRandomGamma) +
                   uint64_t(stream) * kRandomGamma);
}

/// The key of step `step` of a stream.
constexpr uint64_t randomStepKey(uint64_t streamKey, int64_t step) {
  return randomMix(streamKey + uint64_t(step) * kRandomGamma);
}

/// The number in [0, 1) of `counter` under `stepKey`.
constexpr float randomUniform(uint64_t stepKey, int64_t counter) {
  return float(randomMix(stepKey + uint64_t(counter) * kRandomGamma) >>
               (64 - kRandomBits)) *
         kRandomScale;
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_RANDOMUNIFORM_H
