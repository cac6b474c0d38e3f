//===- NcclTypes.cpp - titan's element types and reductions in NCCL -------===//

#include "comm/nccl/NcclTypes.h"

namespace titan::rt {

Status getNcclDataType(int32_t dtype, ncclDataType_t &dataType) {
  switch (dtype) {
  case TITANRT_F32:
    dataType = ncclFloat32;
    return Status::success();
  case TITANRT_F64:
    dataType = ncclFloat64;
    return Status::success();
  case TITANRT_F16:
    dataType = ncclFloat16;
    return Status::success();
  case TITANRT_BF16:
    dataType = ncclBfloat16;
    return Status::success();
  case TITANRT_I64:
    dataType = ncclInt64;
    return Status::success();
  case TITANRT_I32:
    dataType = ncclInt32;
    return Status::success();
  case TITANRT_BOOL:
    return Status::unsupported(
        "reductions of i1 are not supported by NCCL, "
        "which has no boolean type (reduce them as i32)");
  default:
    return Status::invalidArgument("unknown element type " +
                                   std::to_string(dtype));
  }
}

Status getNcclReduction(int32_t dtype, int32_t reduce,
                        NcclReduction &reduction) {
  TITANRT_RETURN_IF_ERROR(getNcclDataType(dtype, reduction.dataType));
  switch (reduce) {
  case TITANRT_SUM:
    reduction.op = ncclSum;
    return Status::success();
  case TITANRT_AVG:
    reduction.op = ncclAvg;
    return Status::success();
  case TITANRT_MAX:
    reduction.op = ncclMax;
    return Status::success();
  case TITANRT_MIN:
    reduction.op = ncclMin;
    return Status::success();
  default:
    return Status::invalidArgument("unknown reduction " +
                                   std::to_string(reduce) +
                                   " (expected sum, avg, max or min)");
  }
}

} // namespace titan::rt
