//===- ReductionsTest.cpp - the elementwise reductions --------------------===//

#include "comm/Reductions.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace titan::rt;

namespace {

Reduction get(titanrt_dtype dtype, titanrt_reduce reduce) {
  Reduction reduction;
  EXPECT_TRUE(getReduction(dtype, reduce, reduction).ok());
  return reduction;
}

uint16_t bfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

TEST(Reductions, NaNWinsMaxAndMin) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float a[3] = {1, nan, 3}, b[3] = {nan, 2, 4}, out[3];
  get(TITANRT_F32, TITANRT_MAX).combine(out, a, b, 3);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], 4);
  get(TITANRT_F32, TITANRT_MIN).combine(out, a, b, 3);
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
  EXPECT_EQ(out[2], 3);
}

TEST(Reductions, IntegerAverageTruncatesAndSumsWrap) {
  int32_t values[3] = {-7, 7, 5};
  Reduction average = get(TITANRT_I32, TITANRT_AVG);
  ASSERT_NE(average.divide, nullptr);
  average.divide(values, 3, 2);
  EXPECT_EQ(values[0], -3);
  EXPECT_EQ(values[1], 3);
  EXPECT_EQ(values[2], 2);
  int64_t big[1] = {std::numeric_limits<int64_t>::max()}, one[1] = {1};
  get(TITANRT_I64, TITANRT_SUM).combine(big, big, one, 1);
  EXPECT_EQ(big[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(get(TITANRT_I64, TITANRT_SUM).divide, nullptr);
}

TEST(Reductions, HalfPrecisionRoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between two bf16 values: it rounds to the even 1;
  // 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
  uint16_t one = bfloat16(1.0f), tie = bfloat16(0.00390625f),
           above = bfloat16(0.01171875f), out;
  Reduction sum = get(TITANRT_BF16, TITANRT_SUM);
  EXPECT_EQ(sum.elementSize, 2u);
  sum.combine(&out, &one, &tie, 1);
  EXPECT_EQ(out, bfloat16(1.0f));
  sum.combine(&out, &one, &above, 1);
  EXPECT_EQ(out, bfloat16(1.015625f));

  _Float16 a = static_cast<_Float16>(1.5f), b = static_cast<_Float16>(0.25f),
           half;
  get(TITANRT_F16, TITANRT_AVG).combine(&half, &a, &b, 1);
  get(TITANRT_F16, TITANRT_AVG).divide(&half, 1, 2);
  EXPECT_EQ(static_cast<float>(half), 0.875f);
}

TEST(Reductions, UnsupportedAndUnknown) {
  Reduction reduction;
  Status status = getReduction(TITANRT_BOOL, TITANRT_SUM, reduction);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(status.getMessage(),
            "reductions of i1 are not supported (reduce them as i32)");
  EXPECT_EQ(getReduction(42, TITANRT_SUM, reduction).getMessage(),
            "unknown element type 42");
  EXPECT_EQ(getReduction(TITANRT_F32, 7, reduction).getMessage(),
            "unknown reduction 7 (expected sum, avg, max or min)");
}

} // namespace
