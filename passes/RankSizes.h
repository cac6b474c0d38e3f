//===- RankSizes.h - what one rank holds and does ---------------*- C++ -*-===//
//
// Bytes and predicted seconds of one rank, read from the placements
// titan-propagate-placements wrote on a global program: the passes that
// trade memory for time (titan-select-recompute) or balance work
// (titan-partition-pipeline) weigh values and ops with them.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_RANKSIZES_H
#define TITAN_PASSES_RANKSIZES_H

#include "titan/CostModel/Device.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/Placement/PlacementAlgebra.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <optional>
#include <string>

namespace mlir::titan {

/// What one rank holds and does, read from the placements propagation wrote
/// (a program without placements is the program of one rank).
class RankSizes {
public:
  RankSizes(func::FuncOp function, const DeviceDescription &device,
            int64_t ranksPerNode)
      : function(function), device(device), ranksPerNode(ranksPerNode) {}

  /// Bytes one rank holds of `value`.
  double getBytes(Value value);
  /// Predicted seconds of running `op` once more on one rank.
  double getSeconds(Operation *op);

private:
  /// The mesh of `placements` (null when there is none or it is invalid).
  const DeviceMesh *getMesh(PlacementsAttr placements);
  /// Elements one rank holds of `value` over its global elements.
  double getShare(Value value);

  func::FuncOp function;
  const DeviceDescription &device;
  int64_t ranksPerNode;
  std::map<std::string, std::optional<DeviceMesh>> meshes;
};

} // namespace mlir::titan

#endif // TITAN_PASSES_RANKSIZES_H
