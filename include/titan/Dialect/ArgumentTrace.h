//===- ArgumentTrace.h - the argument a value carries on --------*- C++ -*-===//
//
// Reports and the memory planner ask which step argument (a parameter, its
// optimizer state) a value is: the argument itself, or what ops of one
// operand (collectives, casts, reshapes) made of it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_ARGUMENTTRACE_H
#define TITAN_DIALECT_ARGUMENTTRACE_H

#include "mlir/IR/Value.h"

namespace mlir::titan {

/// The block argument `value` is, followed back through ops of one operand;
/// null when an op on the way has another number of operands.
inline BlockArgument traceToArgument(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (def->getNumOperands() != 1)
      return BlockArgument();
    value = def->getOperand(0);
  }
  return cast<BlockArgument>(value);
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_ARGUMENTTRACE_H
