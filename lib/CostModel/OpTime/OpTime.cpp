//===- OpTime.cpp - predicted seconds of one titan op ---------------------===//

#include "titan/CostModel/OpTime.h"

#include "titan/Dialect/ElementTypes.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::titan;

ComputeClass mlir::titan::classifyCompute(Operation *op) {
  if (isa<MatmulOp>(op))
    return ComputeClass::Gemm;
  if (isa<AttentionOp, AttentionGradOp>(op))
    return ComputeClass::Attention;
  return ComputeClass::Vector;
}

ElementType mlir::titan::getComputeElementType(Operation *op) {
  for (TypeRange types :
       {TypeRange(op->getOperandTypes()), TypeRange(op->getResultTypes())})
    for (Type type : types)
      if (std::optional<ElementType> element =
              getElementTypeOf(getElementTypeOrSelf(type));
          element && isFloatElementType(*element))
        return *element;
  return ElementType::F32;
}

std::optional<double>
mlir::titan::predictOpSeconds(const DeviceDescription &device, Operation *op,
                              double workFraction) {
  auto cost = dyn_cast<CostOpInterface>(op);
  if (!cost || isa<ReshapeOp, ConstantOp>(op))
    return std::nullopt;
  return predictComputeSeconds(device, classifyCompute(op),
                               getComputeElementType(op),
                               double(cost.getFlops()) * workFraction,
                               double(cost.getBytesAccessed()) * workFraction);
}
