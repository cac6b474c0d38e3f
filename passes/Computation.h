//===- Computation.h - ops that compute ---------------------------*- C++ -*-===//
//
// What the scheduling passes overlap communication with.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_COMPUTATION_H
#define TITAN_PASSES_COMPUTATION_H

#include "titan/Dialect/TitanDialect.h"

namespace mlir::titan {

/// Whether `op` computes (as opposed to viewing, moving shapes or
/// communicating): something worth overlapping communication with.
inline bool computes(Operation *op) {
  auto cost = dyn_cast<CostOpInterface>(op);
  return cost && !isa<CollectiveOpInterface>(op) && cost.getFlops() > 0;
}

/// Whether an op strictly between `from` and `to` (ops of one block, `from`
/// first) computes.
inline bool computesBetween(Operation *from, Operation *to) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (computes(op))
      return true;
  return false;
}

} // namespace mlir::titan

#endif // TITAN_PASSES_COMPUTATION_H
