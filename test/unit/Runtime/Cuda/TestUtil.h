//===- TestUtil.h - helpers of the CUDA backend's CPU tests -----*- C++ -*-===//

#ifndef TITAN_TEST_UNIT_RUNTIME_CUDA_TESTUTIL_H
#define TITAN_TEST_UNIT_RUNTIME_CUDA_TESTUTIL_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace titan::rt::cuda::test {

/// `count` values uniform in [-range, range] from `seed`.
inline std::vector<double> randomValues(int64_t count, uint32_t seed,
                                        double range = 1.0) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> distribution(-range, range);
  std::vector<double> values(static_cast<size_t>(count));
  for (double &value : values)
    value = distribution(generator);
  return values;
}

/// The largest |actual - expected| over the largest |expected| (absolute
/// when expected is all 0).
inline double relativeError(const std::vector<double> &actual,
                            const std::vector<double> &expected) {
  double scale = 0, error = 0;
  for (size_t i = 0; i < expected.size() && i < actual.size(); ++i) {
    scale = std::max(scale, std::abs(expected[i]));
    error = std::max(error, std::abs(actual[i] - expected[i]));
  }
  if (actual.size() != expected.size())
    return INFINITY;
  return scale > 0 ? error / scale : error;
}

/// The gradient of `loss()` with respect to every element of `values` by
/// central differences (each element is perturbed and restored).
template <typename Loss>
std::vector<double> numericGradient(std::vector<double> &values, Loss &&loss,
                                    double step = 1e-6) {
  std::vector<double> gradient(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double saved = values[i];
    values[i] = saved + step;
    const double up = loss();
    values[i] = saved - step;
    const double down = loss();
    values[i] = saved;
    gradient[i] = (up - down) / (2 * step);
  }
  return gradient;
}

/// sum(a * b).
inline double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += a[i] * b[i];
  return sum;
}

} // namespace titan::rt::cuda::test

#endif // TITAN_TEST_UNIT_RUNTIME_CUDA_TESTUTIL_H
