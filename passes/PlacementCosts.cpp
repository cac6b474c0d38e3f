//===- PlacementCosts.cpp - what a placement choice costs -----------------===//
//
// See PlacementCosts.h.
//
//===----------------------------------------------------------------------===//

#include "PlacementCosts.h"

#include "titan/CostModel/CostModel.h"

#include <limits>

using namespace mlir;
using namespace mlir::titan;

const Layout *PropagationState::known(Value value) const {
  auto it = layouts.find(value);
  return it == layouts.end() ? nullptr : &it->second;
}

ChoiceCosts::ChoiceCosts(func::FuncOp func, ArrayRef<int64_t> meshSizes,
                         ArrayRef<double> bandwidth,
                         StationaryAxes stationaryAxes,
                         const PropagationState &state)
    : func(func), meshSizes(meshSizes), bandwidth(bandwidth),
      stationaryAxes(std::move(stationaryAxes)), state(state) {}

double ChoiceCosts::getRedistributionCost(Value value, ArrayRef<Placement> from,
                                          ArrayRef<Placement> to) const {
  auto type = cast<RankedTensorType>(value.getType());
  return estimateRedistribution(type.getShape(),
                                getElementByteWidth(type.getElementType()),
                                from, to, meshSizes, bandwidth)
      .totalSeconds;
}

bool PropagationState::isPlanned(Value value, ArrayRef<Placement> to) const {
  auto it = planned.find(value);
  return it != planned.end() &&
         llvm::any_of(it->second, [&](const Layout &layout) {
           return ArrayRef<Placement>(layout) == to;
         });
}

bool ChoiceCosts::isStationaryAxis(BlockArgument arg, unsigned axis) const {
  std::optional<ArgRole> role = getArgRole(func, arg.getArgNumber());
  auto axes = role ? stationaryAxes.find(*role) : stationaryAxes.end();
  return axes != stationaryAxes.end() && llvm::is_contained(axes->second, axis);
}

bool ChoiceCosts::movesStationaryArg(Value value, ArrayRef<Placement> from,
                                     ArrayRef<Placement> to) const {
  while (auto cast = value.getDefiningOp<CastOp>())
    value = cast.getInput();
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || stationaryAxes.empty())
    return false;
  for (unsigned axis = 0; axis < from.size(); ++axis)
    if (from[axis] != to[axis] && isStationaryAxis(arg, axis))
      return true;
  return false;
}

double ChoiceCosts::getChoiceCost(Operation *op, const OpShardingRule &rule,
                                  ArrayRef<AxisChoice> choices) const {
  double total = 0;
  SmallVector<std::pair<Value, Layout>> counted;
  // Adds the cost of redistributing `value` from `from` to `to` once; an
  // operand's redistribution already planned by another consumer is shared
  // and free.
  auto add = [&](Value value, ArrayRef<Placement> from, Layout to,
                 bool shared) {
    if (ArrayRef<Placement>(from) == ArrayRef<Placement>(to) ||
        (shared && state.isPlanned(value, to)))
      return;
    if (movesStationaryArg(value, from, to)) {
      total = std::numeric_limits<double>::infinity();
      return;
    }
    for (const auto &[seen, layout] : counted)
      if (seen == value && layout == to)
        return;
    total += getRedistributionCost(value, from, to);
    counted.emplace_back(value, std::move(to));
  };
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    const Layout *layout = state.known(operand);
    if (!layout)
      continue;
    add(operand, *layout, getOperandPlacements(rule, choices, index),
        /*shared=*/true);
  }
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    Layout produced = getResultPlacements(rule, choices, index);
    if (const Layout *hint = state.known(result)) {
      // Every layout the consumers decided so far asked for: the hint and
      // the redistributions planned from it. A hint says how to shard; its
      // replicated axes often only mean that the values it came from do not
      // have the dim (labels carry no vocabulary to their logits), so they
      // charge only the reduction of a partial result.
      Layout wanted = *hint;
      for (auto [axis, placement] : llvm::enumerate(wanted))
        if (placement.isReplicate() && !produced[axis].isPartial())
          placement = produced[axis];
      add(result, produced, wanted, /*shared=*/false);
      auto it = state.planned.find(result);
      if (it != state.planned.end())
        for (const Layout &wanted : it->second)
          add(result, produced, wanted, /*shared=*/false);
      continue;
    }
    // A new partial result will have to be reduced: charge, per partial
    // axis, a reduce-scatter onto the first dim the axis divides (or an
    // all-reduce).
    Layout reduced = produced;
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(result.getType()).getShape();
    for (auto [axis, placement] : llvm::enumerate(reduced)) {
      if (!placement.isPartial())
        continue;
      placement = Placement::replicate();
      for (auto [dim, size] : llvm::enumerate(shape)) {
        if (!ShapedType::isDynamic(size) && size % meshSizes[axis] == 0) {
          placement = Placement::shard(dim);
          break;
        }
      }
    }
    if (reduced != produced)
      total += getRedistributionCost(result, produced, reduced);
  }
  return total;
}
