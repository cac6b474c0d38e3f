//===- PlacementHints.h - known layouts spread before deciding --*- C++ -*-===//
//
// The first phase of titan-propagate-placements: the layouts known before
// any op decides (arguments, the plan's hints, pinned results) spread as
// hints through the ops that only move or combine elements.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_PLACEMENTHINTS_H
#define TITAN_PASSES_PLACEMENTHINTS_H

#include "titan/Placement/Placement.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::titan {

/// Spreads the layouts of `layouts` (one placement per mesh axis) through
/// the ops of `ops` whose factors are all parallel (no contraction, no
/// reduction), both ways, to the values no layout reaches yet, until nothing
/// changes: a value learns what the elementwise computation around it
/// already uses, e.g. a weight gradient the layout of the moments AdamW
/// combines it with, before its producer decides. A value takes a hint only
/// when all that reach it in one round agree.
void spreadPlacementHints(
    ArrayRef<Operation *> ops,
    llvm::DenseMap<Value, llvm::SmallVector<Placement>> &layouts);

} // namespace mlir::titan

#endif // TITAN_PASSES_PLACEMENTHINTS_H
