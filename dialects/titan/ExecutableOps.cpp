//===- ExecutableOps.cpp - ops of the executable program ------------------===//

#include "AsmDirectives.h"
#include "OpVerification.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"

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

ParseResult mlir::titan::parseUpdatedTypes(
    OpAsmParser &parser, SmallVectorImpl<Type> &params,
    SmallVectorImpl<Type> &newParams, SmallVectorImpl<Type> &newExpAvgs,
    SmallVectorImpl<Type> &newExpAvgSqs) {
  if (parser.parseTypeList(params))
    return failure();
  for (SmallVectorImpl<Type> *updated :
       {&newParams, &newExpAvgs, &newExpAvgSqs})
    updated->assign(params.begin(), params.end());
  return success();
}

void mlir::titan::printUpdatedTypes(OpAsmPrinter &printer, Operation *,
                                    TypeRange params, TypeRange, TypeRange,
                                    TypeRange) {
  llvm::interleaveComma(params, printer);
}

LogicalResult FusedAdamWOp::verify() {
  size_t count = getParams().size();
  if (getGrads().size() != count)
    return emitOpError() << "expects one gradient per parameter, got "
                         << getGrads().size() << " for " << count
                         << " parameters";
  ArrayRef<int64_t> copied = getCopied() ? *getCopied() : ArrayRef<int64_t>();
  if (copied.size() != getNewParamCopies().size())
    return emitOpError() << "copies " << copied.size()
                         << " parameters but returns "
                         << getNewParamCopies().size() << " copies";
  for (auto [index, parameter] : llvm::enumerate(copied))
    if (parameter < 0 || parameter >= int64_t(count) ||
        (index > 0 && parameter <= copied[index - 1]))
      return emitOpError() << "copied must list parameter indices in "
                              "increasing order, below "
                           << count << ", got " << parameter;
  for (size_t i = 0, j = 0; i < count; ++i) {
    Type copy;
    if (j < copied.size() && copied[j] == int64_t(i))
      copy = getNewParamCopies()[j++].getType();
    if (failed(verifyAdamWTypes(
            *this, cast<RankedTensorType>(getParams()[i].getType()),
            cast<RankedTensorType>(getGrads()[i].getType()), copy)))
      return failure();
  }
  return verifyAdamWHyperparameters(
      *this, getBeta1().convertToDouble(), getBeta2().convertToDouble(),
      getEps().convertToDouble(), getWeightDecay().convertToDouble());
}

// titan.adamw's operations per element of every parameter.
int64_t FusedAdamWOp::getFlops() {
  int64_t perElement = getGradScale() ? 14 : 13;
  int64_t elements = 0;
  for (Value param : getParams())
    elements += getStaticNumElements(param.getType());
  return perElement * elements;
}

LogicalResult SquaredNormOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "expects at least one input";
  return success();
}

// A product and a sum per element.
int64_t SquaredNormOp::getFlops() {
  int64_t elements = 0;
  for (Value input : getInputs())
    elements += getStaticNumElements(input.getType());
  return 2 * elements;
}
