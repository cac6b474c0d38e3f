//===- ComputeOps.cpp - tensor compute ops --------------------------------===//

#include "AsmDirectives.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::titan;

/// Number of elements of a static tensor type, 0 otherwise.
static int64_t numElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : 0;
}

int64_t AddOp::getFlops() { return numElements(getType()); }
