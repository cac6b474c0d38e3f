//===- CostModel.h - what communication and compute cost --------*- C++ -*-===//
//
// The one place titan estimates costs: bytes a rank sends in each collective
// (ring algorithms), the bytes and seconds of a redistribution plan, and the
// redistribution of a tensor between two placements lists. Propagation
// chooses placements with it, titan-materialize-redistributes reports with
// it, and the collective ops' CollectiveOpInterface answers through it (the
// plan report reads that interface). FLOPs and bytes accessed per compute op
// are the ops' CostOpInterface.
//
// Only LLVMSupport and the placement algebra: no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COSTMODEL_COSTMODEL_H
#define TITAN_COSTMODEL_COSTMODEL_H

#include "titan/Placement/PlacementAlgebra.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace mlir::titan {

/// The communication patterns whose traffic the model knows.
enum class CollectiveKind : uint8_t {
  AllGather,
  ReduceScatter,
  AllReduce,
  AllToAll,
  Broadcast,
  Send,
  Recv,
};

/// The bytes one rank sends in a collective of `kind` over `groupSize` = n
/// ranks whose local operand is `inputBytes` (ring algorithms): all_gather
/// (n-1) x its shard, reduce_scatter and all_to_all (n-1)/n of the operand,
/// all_reduce 2(n-1)/n of it, broadcast and send the whole operand, recv
/// nothing.
double getBytesSentPerRank(CollectiveKind kind, int64_t groupSize,
                           double inputBytes);

/// The bytes each rank sends for `step` over a group of `axisSize` ranks,
/// its buffers padded as the step says (`getBytesSentPerRank` of the
/// step's collective on its padded operand); local steps send nothing.
double getStepBytesPerRank(const RedistributeStep &step, int64_t axisSize,
                           int64_t elementBytes);

/// The cost of a redistribution plan.
struct RedistributeCost {
  /// `getStepBytesPerRank` of every step, in plan order.
  llvm::SmallVector<double> stepBytes;
  /// The seconds of every step: its bytes divided by its axis's bandwidth
  /// (0 when no bandwidths were given).
  llvm::SmallVector<double> stepSeconds;
  /// The sums over the steps.
  double totalBytes = 0;
  double totalSeconds = 0;
};

/// Estimates `steps` on a mesh of `meshSizes` for elements of `elementBytes`
/// bytes. `axisBandwidth` is empty or gives, per mesh axis, the bytes per
/// second one rank sends over that axis.
llvm::Expected<RedistributeCost> estimateRedistributeCost(
    llvm::ArrayRef<RedistributeStep> steps, llvm::ArrayRef<int64_t> meshSizes,
    int64_t elementBytes, llvm::ArrayRef<double> axisBandwidth = {});

/// The cost of redistributing a tensor of `shape` (dynamic dims, never
/// sharded, count as 1) with `elementBytes`-byte elements from `from` to `to`
/// on a mesh of `meshSizes`: zero when they agree, infinite bytes and seconds
/// when the placement algebra refuses the move. `axisBandwidth` as for
/// `estimateRedistributeCost`.
RedistributeCost estimateRedistribution(llvm::ArrayRef<int64_t> shape,
                                        int64_t elementBytes,
                                        llvm::ArrayRef<Placement> from,
                                        llvm::ArrayRef<Placement> to,
                                        llvm::ArrayRef<int64_t> meshSizes,
                                        llvm::ArrayRef<double> axisBandwidth);

} // namespace mlir::titan

#endif // TITAN_COSTMODEL_COSTMODEL_H
