//===- TestUtil.h - helpers of the CPU kernel tests -------------*- C++ -*-===//

#ifndef TITAN_TEST_UNIT_RUNTIME_CPU_TESTUTIL_H
#define TITAN_TEST_UNIT_RUNTIME_CPU_TESTUTIL_H

#include "cpu/ThreadPool.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace titan::rt::cpu::test {

/// `count` values uniform in [-range, range] from a fixed seed.
template <typename T>
std::vector<T> randomValues(int64_t count, uint32_t seed, double range = 1.0) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> distribution(-range, range);
  std::vector<T> values(count);
  for (T &value : values)
    value = T(distribution(generator));
  return values;
}

/// The largest |actual - expected| relative to the largest |expected| (or
/// absolute when expected is all 0).
template <typename T>
double relativeError(const std::vector<T> &actual,
                     const std::vector<double> &expected) {
  EXPECT_EQ(actual.size(), expected.size());
  double scale = 0, error = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    scale = std::max(scale, std::abs(expected[i]));
    error = std::max(error, std::abs(double(actual[i]) - expected[i]));
  }
  return scale > 0 ? error / scale : error;
}

/// A pool of `numThreads` threads, kept for the whole test program.
inline ThreadPool &pool(int numThreads) {
  static std::vector<std::unique_ptr<ThreadPool>> pools(8);
  std::unique_ptr<ThreadPool> &slot = pools.at(numThreads);
  if (!slot)
    slot = std::make_unique<ThreadPool>(numThreads);
  return *slot;
}

/// The thread counts every kernel is checked with: results must be bitwise
/// equal for all.
inline const std::vector<int> &threadCounts() {
  static const std::vector<int> counts = {1, 2, 3};
  return counts;
}

} // namespace titan::rt::cpu::test

#endif // TITAN_TEST_UNIT_RUNTIME_CPU_TESTUTIL_H
