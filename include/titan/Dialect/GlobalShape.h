//===- GlobalShape.h - the global shape of a per-rank value -----*- C++ -*-===//
//
// A value of a per-rank program (after titan-spmdize) has its local type; its
// global shape is each sharded dim times the ranks sharding it, unless the
// dim is sharded unevenly (torch.chunk), where every rank holds the largest
// chunk padded and titan-spmdize records the global shape in
// `titan.global_shape` on the function's arguments and results.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_GLOBALSHAPE_H
#define TITAN_DIALECT_GLOBALSHAPE_H

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::titan {

/// The global shape of a value of local type `local` under `placements`
/// (null: replicated) on a mesh of `meshSizes`, or `recorded` when given.
inline SmallVector<int64_t> getGlobalShape(RankedTensorType local,
                                           PlacementsAttr placements,
                                           DenseI64ArrayAttr recorded,
                                           ArrayRef<int64_t> meshSizes) {
  if (recorded)
    return SmallVector<int64_t>(recorded.asArrayRef());
  SmallVector<int64_t> shape(local.getShape());
  if (placements)
    for (auto [axis, placement] : llvm::enumerate(placements.getPlacements()))
      if (placement.isShard() &&
          !ShapedType::isDynamic(shape[placement.getDim()]))
        shape[placement.getDim()] *= meshSizes[axis];
  return shape;
}

/// The global shape of argument `index` of `function`.
inline SmallVector<int64_t> getArgGlobalShape(FunctionOpInterface function,
                                              unsigned index,
                                              ArrayRef<int64_t> meshSizes) {
  return getGlobalShape(
      cast<RankedTensorType>(function.getArgumentTypes()[index]),
      function.getArgAttrOfType<PlacementsAttr>(
          index, TitanDialect::kPlacementsAttrName),
      function.getArgAttrOfType<DenseI64ArrayAttr>(
          index, TitanDialect::kGlobalShapeAttrName),
      meshSizes);
}

/// The global shape of result `index` of `function`.
inline SmallVector<int64_t> getResultGlobalShape(FunctionOpInterface function,
                                                 unsigned index,
                                                 ArrayRef<int64_t> meshSizes) {
  return getGlobalShape(
      cast<RankedTensorType>(function.getResultTypes()[index]),
      function.getResultAttrOfType<PlacementsAttr>(
          index, TitanDialect::kPlacementsAttrName),
      function.getResultAttrOfType<DenseI64ArrayAttr>(
          index, TitanDialect::kGlobalShapeAttrName),
      meshSizes);
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_GLOBALSHAPE_H
