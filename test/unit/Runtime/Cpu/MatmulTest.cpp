//===- MatmulTest.cpp - Tests of the CPU backend's matmul -----------------===//
//
// cpu::matmul against a naive double-precision product, for every transpose
// combination, batches with and without a shared B, sizes that are not
// multiples of the panels, panels split over rows and over columns.
//
//===----------------------------------------------------------------------===//

#include "core/LowPrecision.h"
#include "cpu/CpuKernels.h"

#include "TestUtil.h"

#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

using namespace titan::rt;
using namespace titan::rt::cpu;
using namespace titan::rt::cpu::test;

namespace {

/// One titanrt_matmul call.
struct MatmulCase {
  int64_t batch, m, n, k;
  bool transposeA, transposeB, bShared;
};

/// The case for messages: 3x130x97x160_tA_sharedB.
std::string caseName(const MatmulCase &c) {
  return std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" +
         std::to_string(c.n) + "x" + std::to_string(c.k) +
         (c.transposeA ? "_tA" : "") + (c.transposeB ? "_tB" : "") +
         (c.bShared ? "_sharedB" : "");
}

/// C = op(A) op(B) in double, straight from titanrt.h's definition.
template <typename T>
std::vector<double> referenceMatmul(const MatmulCase &c,
                                    const std::vector<T> &a,
                                    const std::vector<T> &b) {
  std::vector<double> result(c.batch * c.m * c.n);
  for (int64_t e = 0; e < c.batch; ++e) {
    const T *matrixA = a.data() + e * c.m * c.k;
    const T *matrixB = b.data() + (c.bShared ? 0 : e * c.k * c.n);
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < c.k; ++p)
          sum += double(c.transposeA ? matrixA[p * c.m + i]
                                     : matrixA[i * c.k + p]) *
                 double(c.transposeB ? matrixB[j * c.k + p]
                                     : matrixB[p * c.n + j]);
        result[(e * c.m + i) * c.n + j] = sum;
      }
  }
  return result;
}

/// How a call passes titanrt_matmul's addend.
enum class Addend {
  /// None (a null pointer).
  None,
  /// A buffer of its own.
  Separate,
  /// C, which holds the addend on entry.
  InPlace,
};

/// The addends a test runs with.
constexpr Addend kAddends[] = {Addend::None, Addend::Separate, Addend::InPlace};

/// The mode for messages.
const char *addendName(Addend addend) {
  switch (addend) {
  case Addend::None:
    return "no addend";
  case Addend::Separate:
    return "separate addend";
  case Addend::InPlace:
    return "addend in place";
  }
  return "";
}

/// Runs `c` with elements T (dtype) and `mode`'s addend on every thread
/// count; checks the result against the reference within `tolerance`
/// (relative to the largest element) and that repeated runs are bitwise
/// equal.
template <typename T>
void checkMatmul(const MatmulCase &c, int32_t dtype, double tolerance,
                 Addend mode) {
  SCOPED_TRACE(caseName(c) + ", " + addendName(mode));
  std::vector<T> a = randomValues<T>(c.batch * c.m * c.k, 1);
  std::vector<T> b = randomValues<T>((c.bShared ? 1 : c.batch) * c.k * c.n, 2);
  std::vector<double> expected = referenceMatmul(c, a, b);
  std::vector<T> addend = randomValues<T>(expected.size(), 3);
  if (mode != Addend::None)
    for (size_t i = 0; i < expected.size(); ++i)
      expected[i] += double(addend[i]);
  for (int numThreads : threadCounts()) {
    SCOPED_TRACE(std::to_string(numThreads) + " threads");
    std::vector<T> first =
        mode == Addend::InPlace
            ? addend
            : std::vector<T>(expected.size(),
                             std::numeric_limits<T>::quiet_NaN());
    std::vector<T> second = first;
    for (std::vector<T> *result : {&first, &second}) {
      const T *addendData = mode == Addend::Separate  ? addend.data()
                            : mode == Addend::InPlace ? result->data()
                                                      : nullptr;
      Status status = matmul(pool(numThreads), dtype, a.data(), b.data(),
                             addendData, result->data(), c.batch, c.m, c.n, c.k,
                             c.transposeA, c.transposeB, c.bShared);
      ASSERT_TRUE(status.ok()) << status.getMessage();
    }
    EXPECT_LE(relativeError(first, expected), tolerance);
    EXPECT_EQ(
        std::memcmp(first.data(), second.data(), first.size() * sizeof(T)), 0);
  }
}

/// Shapes over every transpose combination.
std::vector<MatmulCase> matmulCases() {
  std::vector<MatmulCase> cases;
  for (bool transposeA : {false, true})
    for (bool transposeB : {false, true}) {
      // One small and one odd-sized GEMM, split into row panels.
      cases.push_back({1, 5, 3, 4, transposeA, transposeB, false});
      cases.push_back({1, 301, 203, 151, transposeA, transposeB, false});
      // Split into column panels (n > m).
      cases.push_back({1, 37, 611, 203, transposeA, transposeB, false});
      // Batches: 3 entries (not a multiple of 2 threads), and a shared B
      // (folded into M without a transpose of A).
      cases.push_back({3, 130, 97, 160, transposeA, transposeB, false});
      cases.push_back({3, 130, 97, 160, transposeA, transposeB, true});
      cases.push_back({4, 7, 9, 5, transposeA, transposeB, true});
    }
  return cases;
}

TEST(MatmulTest, F32MatchesReference) {
  // f32 sums of up to 203 products of values in [-1, 1]: rounding errors of
  // a few 1e-7 relative to the largest element.
  for (const MatmulCase &c : matmulCases())
    for (Addend mode : kAddends)
      checkMatmul<float>(c, TITANRT_F32, 2e-6, mode);
}

TEST(MatmulTest, F64MatchesReference) {
  for (const MatmulCase &c : matmulCases())
    for (Addend mode : kAddends)
      checkMatmul<double>(c, TITANRT_F64, 1e-14, mode);
}

TEST(MatmulTest, Bf16RoundsTheProductOnce) {
  // bf16 operands, products summed in float32 (with the addend) and rounded
  // once to bf16: every element within one bf16 unit in the last place
  // (2^-7 relative; the float32 sum may sit on the other side of a rounding
  // boundary) of the exact sum, and most exactly its rounding.
  for (const MatmulCase &c : {MatmulCase{1, 37, 61, 203, false, true, false},
                              MatmulCase{3, 13, 9, 16, true, false, true}})
    for (Addend mode : kAddends) {
      SCOPED_TRACE(caseName(c) + ", " + addendName(mode));
      auto bf16Values = [](int64_t count, unsigned seed) {
        std::vector<uint16_t> bits;
        for (float value : randomValues<float>(count, seed))
          bits.push_back(floatToBf16(value));
        return bits;
      };
      std::vector<uint16_t> a = bf16Values(c.batch * c.m * c.k, 1);
      std::vector<uint16_t> b =
          bf16Values((c.bShared ? 1 : c.batch) * c.k * c.n, 2);
      auto widened = [](const std::vector<uint16_t> &bits) {
        std::vector<float> values;
        for (uint16_t value : bits)
          values.push_back(bf16ToFloat(value));
        return values;
      };
      std::vector<double> expected = referenceMatmul(c, widened(a), widened(b));
      // Addends as large as the products, so that the sum's rounding differs
      // from the rounding of a rounded product plus the addend.
      std::vector<uint16_t> addend = bf16Values(expected.size(), 3);
      for (uint16_t &bits : addend)
        bits = floatToBf16(bf16ToFloat(bits) * 4.0f);
      if (mode != Addend::None)
        for (size_t i = 0; i < expected.size(); ++i)
          expected[i] += bf16ToFloat(addend[i]);
      std::vector<uint16_t> result =
          mode == Addend::InPlace ? addend
                                  : std::vector<uint16_t>(expected.size());
      const uint16_t *addendData = mode == Addend::Separate  ? addend.data()
                                   : mode == Addend::InPlace ? result.data()
                                                             : nullptr;
      Status status = matmul(pool(2), TITANRT_BF16, a.data(), b.data(),
                             addendData, result.data(), c.batch, c.m, c.n, c.k,
                             c.transposeA, c.transposeB, c.bShared);
      ASSERT_TRUE(status.ok()) << status.getMessage();
      int64_t exact = 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        double value = bf16ToFloat(result[i]);
        EXPECT_LE(std::abs(value - expected[i]),
                  std::abs(expected[i]) * 0x1p-7 + 1e-30);
        exact += result[i] == floatToBf16(float(expected[i]));
      }
      EXPECT_GE(double(exact), 0.9 * double(expected.size()));
    }
}

TEST(MatmulTest, EmptyReductionGivesZeros) {
  std::vector<float> c(2 * 3 * 4, std::numeric_limits<float>::quiet_NaN());
  float unused = 0;
  Status status = matmul(pool(2), TITANRT_F32, &unused, &unused, nullptr,
                         c.data(), 2, 3, 4, 0, false, false, false);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  for (float value : c)
    EXPECT_EQ(value, 0.0f);
}

TEST(MatmulTest, EmptyReductionGivesTheAddend) {
  std::vector<float> addend = randomValues<float>(2 * 3 * 4, 5);
  std::vector<float> c(addend.size(), std::numeric_limits<float>::quiet_NaN());
  float unused = 0;
  Status status = matmul(pool(2), TITANRT_F32, &unused, &unused, addend.data(),
                         c.data(), 2, 3, 4, 0, false, false, false);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_EQ(c, addend);
  // In place: C keeps its values.
  status = matmul(pool(2), TITANRT_F32, &unused, &unused, c.data(), c.data(), 2,
                  3, 4, 0, false, false, false);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_EQ(c, addend);
}

TEST(MatmulTest, EmptyOutputTouchesNothing) {
  std::vector<float> b(4 * 6 * 5);
  Status status = matmul(pool(2), TITANRT_F32, nullptr, b.data(), nullptr,
                         nullptr, 4, 0, 5, 6, false, false, false);
  EXPECT_TRUE(status.ok()) << status.getMessage();
}

/// The code and message of a matmul call on 1-element buffers.
Status matmulStatus(int32_t dtype, int64_t batch, int64_t m, int64_t n,
                    int64_t k, bool nullA = false) {
  static double buffer[4];
  return matmul(pool(1), dtype, nullA ? nullptr : buffer, buffer, nullptr,
                buffer, batch, m, n, k, false, false, false);
}

TEST(MatmulTest, ArgumentErrors) {
  Status negative = matmulStatus(TITANRT_F32, 1, -2, 1, 1);
  EXPECT_EQ(negative.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(negative.getMessage(), "matmul: m = -2 is negative");

  Status negativeBatch = matmulStatus(TITANRT_F32, -1, 1, 1, 1);
  EXPECT_EQ(negativeBatch.getMessage(), "matmul: batch = -1 is negative");

  // An addend that shares some but not all of C's bytes.
  std::vector<float> buffer(8, 1.0f);
  Status overlap = matmul(pool(1), TITANRT_F32, buffer.data(), buffer.data(),
                          buffer.data() + 1, buffer.data() + 2, 1, 2, 2, 1,
                          false, false, false);
  EXPECT_EQ(overlap.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(overlap.getMessage(),
            "matmul: the addend overlaps the output without being it");

  Status null = matmulStatus(TITANRT_F32, 2, 3, 1, 4, /*nullA=*/true);
  EXPECT_EQ(null.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(null.getMessage(), "matmul: a is null but holds 24 elements");

  Status integer = matmulStatus(TITANRT_I64, 1, 1, 1, 1);
  EXPECT_EQ(integer.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(integer.getMessage(),
            "matmul: dtype i64 is not supported by the CPU backend (f32, "
            "f64, bf16, f16)");

  Status unknown = matmulStatus(42, 1, 1, 1, 1);
  EXPECT_EQ(unknown.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(unknown.getMessage(), "matmul: dtype 42 is not a titanrt_dtype");

  // Checked before anything is read: the buffers are far too small.
  Status huge = matmulStatus(TITANRT_F32, 1, int64_t(INT_MAX) + 1, 0, 1);
  EXPECT_EQ(huge.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(huge.getMessage(), "matmul: m = 2147483648 exceeds OpenBLAS's "
                               "32-bit dimensions");

  Status overflow =
      matmulStatus(TITANRT_F32, int64_t(1) << 40, int64_t(1) << 40, 1, 1);
  EXPECT_EQ(overflow.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(overflow.getMessage(), "matmul: a has more than 2^63 elements");
}

} // namespace
