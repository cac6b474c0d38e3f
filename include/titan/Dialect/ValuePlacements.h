//===- ValuePlacements.h - the placements written on a value ----*- C++ -*-===//
//
// Where titan-propagate-placements' decisions live on a program before
// titan-spmdize: a function argument's `titan.placements` attribute, a
// redistribution's target, or the defining op's `titan.placements` array.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_VALUEPLACEMENTS_H
#define TITAN_DIALECT_VALUEPLACEMENTS_H

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::titan {

/// The placements of `value` in `function` (null: none written, which
/// means replicated).
inline PlacementsAttr getValuePlacements(func::FuncOp function, Value value) {
  StringRef name = TitanDialect::kPlacementsAttrName;
  if (auto arg = dyn_cast<BlockArgument>(value))
    return function.getArgAttrOfType<PlacementsAttr>(arg.getArgNumber(), name);
  Operation *def = value.getDefiningOp();
  if (auto redistribute = dyn_cast<RedistributeOp>(def))
    return redistribute.getTo();
  auto attrs = def->getAttrOfType<ArrayAttr>(name);
  return attrs ? dyn_cast<PlacementsAttr>(
                     attrs[cast<OpResult>(value).getResultNumber()])
               : PlacementsAttr();
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_VALUEPLACEMENTS_H
