//===- Simd.h - float vectors for the CPU kernels ---------------*- C++ -*-===//
//
// A float vector as wide as the target's registers (GCC/Clang vector
// extensions: 16 lanes with AVX-512, -march=x86-64-v4; 8 lanes otherwise,
// one AVX2 register with -march=x86-64-v3) and the few operations the
// attention kernels need, exp2 among them. Written with these instead of
// loops the compiler may or may not vectorize, and instead of intrinsics
// that would tie the kernels to one instruction set.
//
// A translation unit's vectors depend on its -march, so everything here
// lives in an inline namespace named after the width: units compiled for
// different targets (AttentionV3.cpp, AttentionV4.cpp) link together
// without two meanings of one symbol.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CPU_SIMD_H
#define TITAN_RUNTIME_CPU_SIMD_H

#include <cstdint>
#include <cstring>

namespace titan::rt::cpu {
#ifdef __AVX512F__
inline namespace simd16 {
/// Lanes of a Vec.
constexpr int64_t kVecLanes = 16;
#else
inline namespace simd8 {
/// Lanes of a Vec.
constexpr int64_t kVecLanes = 8;
#endif

/// kVecLanes floats.
typedef float Vec __attribute__((vector_size(kVecLanes * sizeof(float))));
/// kVecLanes int32s, for the exponent arithmetic of exp2.
typedef int32_t VecInt
    __attribute__((vector_size(kVecLanes * sizeof(int32_t))));

/// The kVecLanes floats at `p` (any alignment).
inline Vec loadVec(const float *p) {
  Vec v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

/// Stores `v` to the kVecLanes floats at `p` (any alignment).
inline void storeVec(float *p, Vec v) { std::memcpy(p, &v, sizeof(v)); }

/// `x` in every lane (x - 0 is x exactly, so this is one broadcast).
inline Vec splat(float x) { return x - Vec{}; }

// maxVec and minVec: with AVX2, the instructions themselves (GCC 12 compiles
// the portable select against a constant, exp2Vec's clamps, to a compare
// and a blend: 10% slower attention at head_dim 16). Both forms give the
// same results, signed zeros included.
#if defined(__AVX__) && !defined(__AVX512F__)
/// The lanewise maximum; a NaN in `a` is kept.
inline Vec maxVec(Vec a, Vec b) { return __builtin_ia32_maxps256(b, a); }

/// The lanewise minimum; a NaN in `a` is kept.
inline Vec minVec(Vec a, Vec b) { return __builtin_ia32_minps256(b, a); }
#else
/// The lanewise maximum; a NaN in `a` is kept.
inline Vec maxVec(Vec a, Vec b) { return a < b ? b : a; }

/// The lanewise minimum; a NaN in `a` is kept.
inline Vec minVec(Vec a, Vec b) { return b < a ? b : a; }
#endif

/// The sum of the lanes of `v`.
inline float sumLanes(Vec v) {
  float sum = 0;
  for (int64_t i = 0; i < kVecLanes; ++i)
    sum += v[i];
  return sum;
}

/// 2^x lanewise, with a relative error of about 1e-7 (1 ulp); arguments are
/// clamped to [-127, 127], and 2^-127 (so also 2^-inf) gives exactly 0, never
/// a denormal; NaN stays NaN. x = n + f with n = round(x) and |f| <= 1/2; 2^f
/// is a degree-6 polynomial (minimax relative error 2e-9 on [-1/2, 1/2],
/// fitted for this kernel), 2^n is built in the exponent field.
inline Vec exp2Vec(Vec x) {
  // Adding 1.5 * 2^23 rounds to an integer (round to nearest even), which
  // the low mantissa bits of the sum then hold.
  const Vec roundingBias = splat(0x1.8p23f);
  x = minVec(maxVec(x, splat(-127.0f)), splat(127.0f));
  Vec biased = x + roundingBias;
  Vec n = biased - roundingBias;
  Vec f = x - n;
  Vec p = splat(0x1.41d334p-13f);
  p = p * f + 0x1.5f456ap-10f;
  p = p * f + 0x1.3b2dbcp-7f;
  p = p * f + 0x1.c6aed4p-5f;
  p = p * f + 0x1.ebfbdap-3f;
  p = p * f + 0x1.62e430p-1f;
  p = p * f + 1.0f;
  VecInt exponent = ((VecInt)biased - (VecInt)roundingBias + 127) << 23;
  return p * (Vec)exponent;
}

} // namespace simd16 / simd8
} // namespace titan::rt::cpu

#endif // TITAN_RUNTIME_CPU_SIMD_H
