//===- NcclTypes.h - titan element types and reductions in NCCL -*- C++ -*-===//
//
// The NCCL element type and reduction of each titanrt_dtype and
// titanrt_reduce that all_reduce and reduce_scatter take. The collectives
// that only move bytes (all_gather, all_to_all, broadcast, send, recv) move
// them as ncclUint8 and need no mapping.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_NCCL_NCCLTYPES_H
#define TITAN_RUNTIME_COMM_NCCL_NCCLTYPES_H

#include "comm/nccl/NcclVersion.h"
#include "core/Status.h"

#include <cstdint>

namespace titan::rt {

/// How NCCL reduces elements of one dtype with one titanrt_reduce.
struct NcclReduction {
  ncclDataType_t dataType = ncclFloat32;
  /// ncclSum, ncclAvg (the sum divided by the group size: floating types
  /// scale each input by 1/size before summing, integers divide the sum,
  /// truncating toward zero), ncclMax or ncclMin.
  ncclRedOp_t op = ncclSum;
};

/// The NCCL element type reductions of `dtype` use. i1 is
/// TITANRT_ERROR_UNSUPPORTED (NCCL has no boolean type); an unknown code is
/// TITANRT_ERROR_INVALID_ARGUMENT.
Status getNcclDataType(int32_t dtype, ncclDataType_t &dataType);

/// The NCCL reduction `reduce` over elements of `dtype`, or an error naming
/// what NCCL cannot reduce: i1 (reduce it as i32), an unknown dtype or
/// reduction code.
Status getNcclReduction(int32_t dtype, int32_t reduce,
                        NcclReduction &reduction);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_NCCL_NCCLTYPES_H
