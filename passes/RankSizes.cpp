//===- RankSizes.cpp - what one rank holds and does -----------------------===//
//
// Implements RankSizes (see RankSizes.h).
//
//===----------------------------------------------------------------------===//

#include "RankSizes.h"

#include "titan/Config/DeviceFile.h"
#include "titan/CostModel/CostModel.h"
#include "titan/CostModel/OpTime.h"
#include "titan/Dialect/Partition.h"
#include "titan/Dialect/ValuePlacements.h"

#include <cmath>

using namespace mlir;
using namespace mlir::titan;

const DeviceMesh *RankSizes::getMesh(PlacementsAttr placements) {
  if (!placements)
    return nullptr;
  FlatSymbolRefAttr symbol = placements.getMesh();
  auto [entry, inserted] = meshes.try_emplace(symbol.getValue().str());
  if (inserted)
    if (MeshOp mesh = MeshOp::lookup(function, symbol))
      if (FailureOr<DeviceMesh> deviceMesh = mesh.getDeviceMesh();
          succeeded(deviceMesh))
        entry->second = std::move(*deviceMesh);
  return entry->second ? &*entry->second : nullptr;
}

double RankSizes::getShare(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  PlacementsAttr placements = getValuePlacements(function, value);
  const DeviceMesh *mesh = getMesh(placements);
  if (!type || !mesh || getStaticNumElements(type) == 0)
    return 1.0;
  RankedTensorType local =
      getLocalType(type, *mesh, placements.getPlacements());
  return double(getStaticNumElements(local)) /
         double(getStaticNumElements(type));
}

double RankSizes::getBytes(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return 0;
  return getShare(value) * double(getStaticNumElements(type)) *
         double(getElementByteWidth(type.getElementType()));
}

double RankSizes::getSeconds(Operation *op) {
  if (auto redistribute = dyn_cast<RedistributeOp>(op)) {
    // Communication: the redistribution plan's bytes over the link of each
    // axis it moves data on.
    PlacementsAttr to = redistribute.getTo();
    const DeviceMesh *mesh = getMesh(to);
    if (!mesh)
      return 0;
    PlacementsAttr from = getValuePlacements(function, redistribute.getInput());
    SmallVector<Placement> fromList =
        from ? SmallVector<Placement>(from.getPlacements())
             : SmallVector<Placement>(to.size(), Placement::replicate());
    SmallVector<double> bandwidth;
    for (unsigned axis = 0; axis < mesh->getNumAxes(); ++axis)
      bandwidth.push_back(
          getAxesLink(device, mesh->getSizes(), {axis}, ranksPerNode)
              .bytesPerSecond);
    auto type = cast<RankedTensorType>(redistribute.getInput().getType());
    RedistributeCost cost = estimateRedistribution(
        getStaticShape(type.getShape()),
        getElementByteWidth(type.getElementType()), fromList,
        to.getPlacements(), mesh->getSizes(), bandwidth);
    return std::isfinite(cost.totalSeconds) ? cost.totalSeconds : 0;
  }
  // A rank does the share of the work of its most divided operand or
  // result (a column-parallel matmul: its weight's and output's; a
  // row-parallel one: its input's; data parallelism: the batch's).
  double share = 1.0;
  for (ValueRange values :
       {ValueRange(op->getOperands()), ValueRange(op->getResults())})
    for (Value value : values)
      share = std::min(share, getShare(value));
  return predictOpSeconds(device, op, share).value_or(0.0);
}
