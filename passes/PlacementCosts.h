//===- PlacementCosts.h - what a placement choice costs ---------*- C++ -*-===//
//
// The costing phase of titan-propagate-placements: what propagation knows
// while it decides (the layout or hint of each value, the redistributions
// planned), and the cost of an op's choice per mesh axis given that, from
// the cost model's redistribution estimates.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_PLACEMENTCOSTS_H
#define TITAN_PASSES_PLACEMENTCOSTS_H

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/AxisChoice.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <map>

namespace mlir::titan {

/// The placements of a value, one per mesh axis.
using Layout = SmallVector<Placement>;

/// Per argument role: the mesh axes on which such arguments are never
/// redistributed.
using StationaryAxes = std::map<ArgRole, SmallVector<unsigned>>;

/// What propagation knows while it decides.
struct PropagationState {
  /// The layout of each value: fixed once its producer decided (or by the
  /// signature), a hint before (a layout the plan or the values around it
  /// ask for).
  DenseMap<Value, Layout> layouts;
  /// Layouts other than its own that a value is redistributed to.
  DenseMap<Value, SmallVector<Layout, 1>> planned;

  /// The known layout of `value`, if any.
  const Layout *known(Value value) const;
  /// True when a redistribute of `value` to `to` is already planned.
  bool isPlanned(Value value, ArrayRef<Placement> to) const;
};

/// The cost of placement choices in a function on a mesh of `meshSizes`
/// with `bandwidth` bytes per second per axis (1 each: costs are bytes).
class ChoiceCosts {
public:
  /// Arguments never move on their role's `stationaryAxes`.
  ChoiceCosts(func::FuncOp func, ArrayRef<int64_t> meshSizes,
              ArrayRef<double> bandwidth, StationaryAxes stationaryAxes,
              const PropagationState &state);

  /// The seconds of redistributing `value` from `from` to `to` (infinite
  /// when the placement algebra refuses).
  double getRedistributionCost(Value value, ArrayRef<Placement> from,
                               ArrayRef<Placement> to) const;
  /// The cost of `choices` for `op` given what is known: the sum, over its
  /// operands and the layouts asked of its results that it would
  /// redistribute (each (value, layout) once, zero for a redistribution
  /// already planned), of their costs; a new partial result is charged the
  /// reduce-scatter it will need (per partial axis onto its first dim the
  /// axis divides, or an all-reduce); moving a stationary argument is
  /// infinite.
  double getChoiceCost(Operation *op, const OpShardingRule &rule,
                       ArrayRef<AxisChoice> choices) const;
  /// True when `arg`'s role keeps it stationary on mesh axis `axis`.
  bool isStationaryAxis(BlockArgument arg, unsigned axis) const;

private:
  /// True when `to` moves argument `value` (or its cast to another element
  /// type: a parameter under mixed precision) on an axis where its role
  /// keeps it stationary.
  bool movesStationaryArg(Value value, ArrayRef<Placement> from,
                          ArrayRef<Placement> to) const;

  func::FuncOp func;
  ArrayRef<int64_t> meshSizes;
  ArrayRef<double> bandwidth;
  StationaryAxes stationaryAxes;
  const PropagationState &state;
};

} // namespace mlir::titan

#endif // TITAN_PASSES_PLACEMENTCOSTS_H
