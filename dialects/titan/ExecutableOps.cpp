//===- ExecutableOps.cpp - ops of the executable program ------------------===//

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::titan;

#include "titan/TitanEnums.cpp.inc"

LogicalResult BufferAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 MemoryRegion region, int64_t offset,
                                 int64_t bytes) {
  if (offset < 0 || bytes < 0)
    return emitError() << "a buffer's offset and size must be non-negative, "
                          "got offset "
                       << offset << " and " << bytes << " bytes";
  return success();
}

/// Whether a memref parameter of a lowered kernel can hold `tensor`: same
/// shape and element type.
static bool holds(Type parameter, Type tensor) {
  auto memref = dyn_cast<MemRefType>(parameter);
  auto ranked = dyn_cast<RankedTensorType>(tensor);
  return memref && ranked && memref.getShape() == ranked.getShape() &&
         memref.getElementType() == ranked.getElementType();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto kernel =
      symbolTable.lookupNearestSymbolFrom<func::FuncOp>(*this, getKernelAttr());
  if (!kernel)
    return emitOpError() << "kernel " << getKernelAttr()
                         << " is not a function";
  if (!kernel->hasAttr(TitanDialect::kKernelAttrName))
    return emitOpError() << "callee " << getKernelAttr() << " is not marked '"
                         << TitanDialect::kKernelAttrName << "'";
  FunctionType type = kernel.getFunctionType();
  // A kernel still on tensors has the launch's type.
  if (type.getNumResults() != 0) {
    if (!llvm::equal(type.getInputs(), getInputs().getTypes()) ||
        !llvm::equal(type.getResults(), getResultTypes()))
      return emitOpError() << "operand and result types do not match "
                           << getKernelAttr() << "'s type " << type;
    return success();
  }
  // A lowered kernel: inputs, then results, then scratch, as memrefs.
  unsigned numInputs = getInputs().size(), numResults = getNumResults();
  if (type.getNumInputs() < numInputs + numResults)
    return emitOpError() << "lowered kernel " << getKernelAttr() << " takes "
                         << type.getNumInputs() << " buffers, fewer than the "
                         << numInputs + numResults
                         << " inputs and results of the launch";
  for (auto [index, value] : llvm::enumerate(getInputs()))
    if (!holds(type.getInput(index), value.getType()))
      return emitOpError() << "input #" << index << " of type "
                           << value.getType() << " does not match parameter "
                           << type.getInput(index) << " of " << getKernelAttr();
  for (auto [index, value] : llvm::enumerate(getResults()))
    if (!holds(type.getInput(numInputs + index), value.getType()))
      return emitOpError() << "result #" << index << " of type "
                           << value.getType() << " does not match parameter "
                           << type.getInput(numInputs + index) << " of "
                           << getKernelAttr();
  return success();
}
