//===- NcclTypesTest.cpp - titan's element types and reductions in NCCL ---===//

#include "comm/nccl/NcclTypes.h"

#include "gtest/gtest.h"

using namespace titan::rt;

namespace {

TEST(NcclTypes, EveryReducibleDtypeHasItsNcclType) {
  const std::pair<titanrt_dtype, ncclDataType_t> expected[] = {
      {TITANRT_F32, ncclFloat32},   {TITANRT_F64, ncclFloat64},
      {TITANRT_BF16, ncclBfloat16}, {TITANRT_F16, ncclFloat16},
      {TITANRT_I64, ncclInt64},     {TITANRT_I32, ncclInt32}};
  for (const auto &[dtype, type] : expected) {
    ncclDataType_t mapped = ncclUint8;
    ASSERT_TRUE(getNcclDataType(dtype, mapped).ok()) << dtypeName(dtype);
    EXPECT_EQ(mapped, type) << dtypeName(dtype);
  }
}

TEST(NcclTypes, EveryReductionOfEveryReducibleDtype) {
  const std::pair<titanrt_reduce, ncclRedOp_t> expected[] = {
      {TITANRT_SUM, ncclSum},
      {TITANRT_AVG, ncclAvg},
      {TITANRT_MAX, ncclMax},
      {TITANRT_MIN, ncclMin}};
  for (titanrt_dtype dtype : {TITANRT_F32, TITANRT_F64, TITANRT_BF16,
                              TITANRT_F16, TITANRT_I64, TITANRT_I32}) {
    for (const auto &[reduce, op] : expected) {
      NcclReduction reduction;
      ASSERT_TRUE(getNcclReduction(dtype, reduce, reduction).ok());
      EXPECT_EQ(reduction.op, op);
      ncclDataType_t type = ncclUint8;
      ASSERT_TRUE(getNcclDataType(dtype, type).ok());
      EXPECT_EQ(reduction.dataType, type);
    }
  }
}

TEST(NcclTypes, RefusalsNameWhatNcclCannotReduce) {
  NcclReduction reduction;
  Status status = getNcclReduction(TITANRT_BOOL, TITANRT_MAX, reduction);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(status.getMessage(),
            "reductions of i1 are not supported by NCCL, which has no boolean "
            "type (reduce them as i32)");

  status = getNcclReduction(42, TITANRT_SUM, reduction);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(status.getMessage(), "unknown element type 42");

  status = getNcclReduction(TITANRT_F32, 9, reduction);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(status.getMessage(),
            "unknown reduction 9 (expected sum, avg, max or min)");
}

} // namespace
