//===- OpTime.h - predicted seconds of one titan op -------------*- C++ -*-===//
//
// The device time model (titan/CostModel/Device.h) applied to an op of the
// titan dialect: which roofline class it falls in, the element type it
// computes in, and its predicted seconds from its CostOpInterface counts.
// Used by the plan report's prediction and by the passes that trade compute
// for memory (titan-select-recompute).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COSTMODEL_OPTIME_H
#define TITAN_COSTMODEL_OPTIME_H

#include "titan/CostModel/Device.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir::titan {

/// How the cost model times `op`: matmuls as GEMMs, attention and its
/// gradient as fused attention kernels, everything else as vector work.
ComputeClass classifyCompute(Operation *op);

/// The element type `op` computes in: its first floating-point operand's or
/// result's (F32 when it has none).
ElementType getComputeElementType(Operation *op);

/// The predicted seconds of compute op `op` on `device` when it does
/// `workFraction` of the FLOPs and bytes its types count (a rank's share of
/// a global op). None for ops that do no work at run time (reshapes, which
/// are views; constants, which are data) and for ops without
/// CostOpInterface (collectives are timed by predictCollectiveSeconds).
std::optional<double> predictOpSeconds(const DeviceDescription &device,
                                       Operation *op,
                                       double workFraction = 1.0);

} // namespace mlir::titan

#endif // TITAN_COSTMODEL_OPTIME_H
